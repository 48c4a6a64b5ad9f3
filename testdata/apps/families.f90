! families.f90: the MPI API families of dtpa's issue 22 in Fortran
! (use mpi_f08), for the end-to-end tests (e2e/family_f90_test.go). One
! family per run, named by the first argument; 4 ranks. Built with -cpp
! -fopenmp (the threads family runs OpenMP threads), and -DDT_MPI4 where
! the MPI has MPI 4's persistent collectives (MPICH 4; Open MPI 4.1 has
! them only as MPIX_ extensions).
!
!   requests   every kind of request-creating call, each completed by a
!              wait or test: nonblocking file I/O (MPI_File_iwrite_at,
!              iread_at, iwrite_at_all, iread_at_all, iwrite, iread,
!              iwrite_all, iread_all) waited with MPI_Wait, generalized
!              requests (one completed, one cancelled), MPI_Comm_idup,
!              nonblocking collectives, persistent point-to-point (three
!              rounds), persistent collectives (MPI 4), request-based RMA
!              (MPI_Rput, MPI_Rget, MPI_Raccumulate).
!   intercomm  an intercommunicator between the even and the odd ranks:
!              point-to-point to remote ranks, rooted collectives in both
!              directions (MPI_ROOT / MPI_PROC_NULL), all-to-all
!              collectives, a merge.
!   threads    MPI_THREAD_MULTIPLE: ranks pair up (0–1, 2–3); OpenMP
!              thread 1 (A) of the even rank receives one message from its
!              partner, which rank 1 sends after sleeping 0.2 s; thread 2
!              (B) sends ten messages the odd rank receives with MPI_Irecv
!              and MPI_Wait; thread 0 runs an allreduce on a duplicate
!              meanwhile. The receivers print how long they waited (the
!              sender puts the time it sends in the message; gfortran's
!              SYSTEM_CLOCK is CLOCK_MONOTONIC, one clock per host).
!   pickle5    what mpi4py's pickle-5 utilities call: MPI_Issend,
!              MPI_Mprobe / MPI_Mrecv, MPI_Improbe / MPI_Imrecv, and
!              MPI_Probe with MPI_ANY_SOURCE before 1 MiB messages.
!
!     dtf90 -cpp -fopenmp -o families families.f90
!     dtrun -np 4 ./families requests && dtpa families
module grequest_fns
  use mpi_f08
  implicit none
contains
  subroutine query_fn(extra_state, status, ierror)
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
    type(MPI_Status) :: status
    integer :: ierror
    call MPI_Status_set_elements(status, MPI_BYTE, 0, ierror)
    call MPI_Status_set_cancelled(status, .false., ierror)
    status%MPI_SOURCE = MPI_UNDEFINED
    status%MPI_TAG = MPI_UNDEFINED
    ierror = MPI_SUCCESS
  end subroutine query_fn

  subroutine free_fn(extra_state, ierror)
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
    integer :: ierror
    ierror = MPI_SUCCESS
  end subroutine free_fn

  subroutine cancel_fn(extra_state, complete, ierror)
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
    logical :: complete
    integer :: ierror
    ierror = MPI_SUCCESS
  end subroutine cancel_fn
end module grequest_fns

program families
  use mpi_f08
  use grequest_fns
  use, intrinsic :: iso_c_binding, only: c_int
  implicit none
  interface
    integer(c_int) function usleep(us) bind(C, name="usleep")
      import :: c_int
      integer(c_int), value :: us
    end function usleep
  end interface
  character(len=32) :: family
  integer :: rank, size, provided

  call get_command_argument(1, family)
  call MPI_Init_thread(MPI_THREAD_MULTIPLE, provided)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, size)
  select case (trim(family))
  case ("requests")
    call requests()
  case ("intercomm")
    call intercomm()
  case ("threads")
    if (provided /= MPI_THREAD_MULTIPLE) stop "no MPI_THREAD_MULTIPLE"
    call threads()
  case ("pickle5")
    call pickle5()
  case default
    stop "unknown family"
  end select
  call MPI_Barrier(MPI_COMM_WORLD)
  if (rank == 0) print '(3a)', 'families.f90: ', trim(family), ' done'
  call MPI_Finalize()

contains

  subroutine requests()
    integer, parameter :: n = 64
    integer, asynchronous :: out(n), got(n), sbuf(1), rbuf(1), allv(4), one(1), res(1)
    integer(kind=MPI_OFFSET_KIND) :: off, blk
    integer(kind=MPI_ADDRESS_KIND) :: wsize, disp
    character(len=256) :: tmp
    type(MPI_File) :: fh
    type(MPI_Request) :: req, reqs(5), ps(2)
    type(MPI_Comm) :: dup
    type(MPI_Win) :: win
    integer :: mem(4), back(1), tgt, i, l
    logical :: flag

    ! Nonblocking file I/O, each request waited with MPI_Wait.
    call get_environment_variable("TMPDIR", tmp, l)
    if (l == 0) tmp = "/tmp"
    call MPI_File_open(MPI_COMM_WORLD, trim(tmp)//"/families.f90.dat", &
      MPI_MODE_CREATE + MPI_MODE_RDWR + MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, fh)
    out = rank
    blk = n * 4
    off = rank * blk
    call MPI_File_iwrite_at(fh, off, out, n, MPI_INTEGER, req)
    call MPI_Wait(req, MPI_STATUS_IGNORE)
    call MPI_File_iread_at(fh, off, got, n, MPI_INTEGER, req)
    call MPI_Wait(req, MPI_STATUS_IGNORE)
    if (any(got /= out)) stop "iread_at"
    call MPI_File_iwrite_at_all(fh, off + size * blk, out, n, MPI_INTEGER, req)
    call MPI_Wait(req, MPI_STATUS_IGNORE)
    call MPI_File_iread_at_all(fh, off + size * blk, got, n, MPI_INTEGER, req)
    call MPI_Wait(req, MPI_STATUS_IGNORE)
    call MPI_File_set_view(fh, 2 * size * blk + off, MPI_INTEGER, MPI_INTEGER, "native", MPI_INFO_NULL)
    call MPI_File_iwrite(fh, out, n, MPI_INTEGER, req)
    call MPI_Wait(req, MPI_STATUS_IGNORE)
    call MPI_File_seek(fh, 0_MPI_OFFSET_KIND, MPI_SEEK_SET)
    call MPI_File_iread(fh, got, n, MPI_INTEGER, req)
    call MPI_Wait(req, MPI_STATUS_IGNORE)
    call MPI_File_set_view(fh, 3 * size * blk + off, MPI_INTEGER, MPI_INTEGER, "native", MPI_INFO_NULL)
    call MPI_File_iwrite_all(fh, out, n, MPI_INTEGER, req)
    call MPI_Wait(req, MPI_STATUS_IGNORE)
    call MPI_File_seek(fh, 0_MPI_OFFSET_KIND, MPI_SEEK_SET)
    call MPI_File_iread_all(fh, got, n, MPI_INTEGER, req)
    call MPI_Wait(req, MPI_STATUS_IGNORE)
    call MPI_File_close(fh)

    ! Generalized requests: one completed before its wait, one cancelled.
    call MPI_Grequest_start(query_fn, free_fn, cancel_fn, 0_MPI_ADDRESS_KIND, req)
    call MPI_Grequest_complete(req)
    call MPI_Wait(req, MPI_STATUS_IGNORE)
    call MPI_Grequest_start(query_fn, free_fn, cancel_fn, 0_MPI_ADDRESS_KIND, req)
    call MPI_Cancel(req)
    call MPI_Grequest_complete(req)
    call MPI_Test(req, flag, MPI_STATUS_IGNORE)

    ! MPI_Comm_idup: the new communicator is used once the request is done.
    call MPI_Comm_idup(MPI_COMM_WORLD, dup, req)
    call MPI_Wait(req, MPI_STATUS_IGNORE)
    one = 1
    call MPI_Allreduce(one, res, 1, MPI_INTEGER, MPI_SUM, dup)
    if (res(1) /= size) stop "idup"

    ! Nonblocking collectives.
    one = rank
    call MPI_Ibarrier(dup, reqs(1))
    call MPI_Iallreduce(one, res, 1, MPI_INTEGER, MPI_SUM, dup, reqs(2))
    call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
    call MPI_Ibcast(one, 1, MPI_INTEGER, 1, dup, req)
    call MPI_Wait(req, MPI_STATUS_IGNORE)
    one = rank
    call MPI_Iallgather(one, 1, MPI_INTEGER, allv, 1, MPI_INTEGER, dup, req)
    flag = .false.
    do while (.not. flag)
      call MPI_Test(req, flag, MPI_STATUS_IGNORE)
    end do
    sbuf = rank
    call MPI_Ialltoall(allv, 1, MPI_INTEGER, got, 1, MPI_INTEGER, dup, reqs(1))
    call MPI_Igather(sbuf, 1, MPI_INTEGER, allv, 1, MPI_INTEGER, 0, dup, reqs(2))
    call MPI_Iscan(sbuf, rbuf, 1, MPI_INTEGER, MPI_SUM, dup, reqs(3))
    call MPI_Waitall(3, reqs, MPI_STATUSES_IGNORE)

    ! Persistent point-to-point, three rounds around a ring.
    call MPI_Send_init(sbuf, 1, MPI_INTEGER, mod(rank + 1, size), 3, MPI_COMM_WORLD, ps(1))
    call MPI_Recv_init(rbuf, 1, MPI_INTEGER, mod(rank + size - 1, size), 3, MPI_COMM_WORLD, ps(2))
    do i = 1, 3
      call MPI_Startall(2, ps)
      call MPI_Waitall(2, ps, MPI_STATUSES_IGNORE)
      if (rbuf(1) /= mod(rank + size - 1, size)) stop "persistent"
    end do
    call MPI_Request_free(ps(1))
    call MPI_Request_free(ps(2))

#ifdef DT_MPI4
    ! Persistent collectives (MPI 4), two rounds.
    call MPI_Allreduce_init(sbuf, res, 1, MPI_INTEGER, MPI_SUM, dup, MPI_INFO_NULL, ps(1))
    call MPI_Bcast_init(one, 1, MPI_INTEGER, 0, dup, MPI_INFO_NULL, ps(2))
    do i = 1, 2
      call MPI_Start(ps(1))
      call MPI_Wait(ps(1), MPI_STATUS_IGNORE)
      call MPI_Start(ps(2))
      call MPI_Wait(ps(2), MPI_STATUS_IGNORE)
    end do
    call MPI_Request_free(ps(1))
    call MPI_Request_free(ps(2))
#endif
    call MPI_Comm_free(dup)

    ! Request-based RMA in a passive-target epoch.
    mem = 0
    wsize = 4 * 4
    call MPI_Win_create(mem, wsize, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win)
    call MPI_Win_lock_all(0, win)
    tgt = mod(rank + 1, size)
    disp = rank
    sbuf = rank
    call MPI_Rput(sbuf, 1, MPI_INTEGER, tgt, disp, 1, MPI_INTEGER, win, req)
    call MPI_Wait(req, MPI_STATUS_IGNORE)
    call MPI_Win_flush(tgt, win)
    call MPI_Rget(back, 1, MPI_INTEGER, tgt, disp, 1, MPI_INTEGER, win, req)
    call MPI_Wait(req, MPI_STATUS_IGNORE)
    one = 1
    call MPI_Raccumulate(one, 1, MPI_INTEGER, tgt, disp, 1, MPI_INTEGER, MPI_SUM, win, req)
    call MPI_Wait(req, MPI_STATUS_IGNORE)
    call MPI_Win_unlock_all(win)
    call MPI_Barrier(MPI_COMM_WORLD)
    call MPI_Win_free(win)
  end subroutine requests

  subroutine intercomm()
    type(MPI_Comm) :: local, inter, merged, idup
    type(MPI_Request) :: reqs(2)
    integer :: color, lr, remote, root, rg
    integer :: v(1), w(1), b(1), rv(4), sv(4)
    color = mod(rank, 2)
    call MPI_Comm_split(MPI_COMM_WORLD, color, rank, local)
    call MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - color, 12, inter)
    call MPI_Comm_rank(local, lr)
    call MPI_Comm_remote_size(inter, remote)
    ! Point-to-point: rank lr of one group with rank lr of the other.
    v = rank
    if (color == 0) then
      call MPI_Send(v, 1, MPI_INTEGER, lr, 1, inter)
      call MPI_Recv(w, 1, MPI_INTEGER, lr, 2, inter, MPI_STATUS_IGNORE)
    else
      call MPI_Recv(w, 1, MPI_INTEGER, lr, 1, inter, MPI_STATUS_IGNORE)
      call MPI_Send(v, 1, MPI_INTEGER, lr, 2, inter)
    end if
    call MPI_Isend(v, 1, MPI_INTEGER, lr, 3, inter, reqs(1))
    call MPI_Irecv(w, 1, MPI_INTEGER, MPI_ANY_SOURCE, 3, inter, reqs(2))
    call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
    call MPI_Sendrecv(v, 1, MPI_INTEGER, lr, 4, w, 1, MPI_INTEGER, lr, 4, inter, MPI_STATUS_IGNORE)
    ! Rooted collectives, each group the root once.
    do rg = 0, 1
      if (color == rg) then
        root = MPI_PROC_NULL
        if (lr == 0) root = MPI_ROOT
      else
        root = 0
      end if
      b = 7
      sv = rank
      call MPI_Bcast(b, 1, MPI_INTEGER, root, inter)
      call MPI_Gather(v, 1, MPI_INTEGER, rv, 1, MPI_INTEGER, root, inter)
      call MPI_Scatter(sv, 1, MPI_INTEGER, w, 1, MPI_INTEGER, root, inter)
      call MPI_Reduce(v, rv, 1, MPI_INTEGER, MPI_SUM, root, inter)
    end do
    ! All-to-all collectives span both groups.
    call MPI_Allreduce(v, w, 1, MPI_INTEGER, MPI_SUM, inter)
    call MPI_Allgather(v, 1, MPI_INTEGER, rv, 1, MPI_INTEGER, inter)
    sv = rank
    call MPI_Alltoall(sv, 1, MPI_INTEGER, rv, 1, MPI_INTEGER, inter)
    call MPI_Barrier(inter)
    ! A nonblocking duplicate of the intercommunicator, and nonblocking
    ! collectives on it.
    call MPI_Comm_idup(inter, idup, reqs(1))
    call MPI_Wait(reqs(1), MPI_STATUS_IGNORE)
    call MPI_Allreduce(v, w, 1, MPI_INTEGER, MPI_SUM, idup)
    call MPI_Iallreduce(v, w, 1, MPI_INTEGER, MPI_SUM, idup, reqs(1))
    call MPI_Wait(reqs(1), MPI_STATUS_IGNORE)
    call MPI_Ibarrier(idup, reqs(1))
    call MPI_Wait(reqs(1), MPI_STATUS_IGNORE)
    call MPI_Comm_free(idup)
    call MPI_Intercomm_merge(inter, color == 1, merged)
    call MPI_Allreduce(v, w, 1, MPI_INTEGER, MPI_SUM, merged)
    call MPI_Comm_free(merged)
    call MPI_Comm_free(inter)
    call MPI_Comm_free(local)
  end subroutine intercomm

  subroutine threads()
    use omp_lib
    type(MPI_Comm) :: dup
    type(MPI_Request) :: req
    integer :: partner, i, v(1), s(1), r(1), rc
    real(8) :: t(1), t0
    partner = ieor(rank, 1)
    call MPI_Comm_dup(MPI_COMM_WORLD, dup)
    !$omp parallel num_threads(3) private(i, v, t, t0, req, rc)
    select case (omp_get_thread_num())
    case (0)
      s = rank
      call MPI_Allreduce(s, r, 1, MPI_INTEGER, MPI_SUM, dup)
    case (1)
      if (mod(rank, 2) == 0) then
        t0 = now()
        call MPI_Recv(t, 1, MPI_DOUBLE_PRECISION, partner, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
        print '(a,i0,a,f0.6,a)', 'threads: rank ', rank, ' waited ', max(t(1) - t0, 0d0), ' s'
      else
        if (rank == 1) rc = usleep(200000_c_int)
        t = now()
        call MPI_Send(t, 1, MPI_DOUBLE_PRECISION, partner, 1, MPI_COMM_WORLD)
      end if
    case (2)
      do i = 0, 9
        v = rank * 100 + i
        if (mod(rank, 2) == 0) then
          call MPI_Send(v, 1, MPI_INTEGER, partner, 2, MPI_COMM_WORLD)
        else
          call MPI_Irecv(v, 1, MPI_INTEGER, partner, 2, MPI_COMM_WORLD, req)
          call MPI_Wait(req, MPI_STATUS_IGNORE)
        end if
      end do
    end select
    !$omp end parallel
    call MPI_Comm_free(dup)
  end subroutine threads

  ! now is SYSTEM_CLOCK in seconds.
  real(8) function now()
    integer(8) :: c, rate
    call system_clock(c, rate)
    now = real(c, 8) / real(rate, 8)
  end function now

  subroutine pickle5()
    integer, parameter :: big = 262144 ! 1 MiB of integers
    integer, allocatable, asynchronous :: buf(:)
    type(MPI_Request) :: req
    type(MPI_Message) :: msg
    type(MPI_Status) :: st
    integer :: partner, cnt, src
    logical :: flag
    allocate(buf(big))
    buf = rank
    partner = ieor(rank, 1)
    if (mod(rank, 2) == 0) then
      call MPI_Issend(buf, big, MPI_INTEGER, partner, 1, MPI_COMM_WORLD, req)
      call MPI_Wait(req, MPI_STATUS_IGNORE)
      call MPI_Issend(buf, big, MPI_INTEGER, partner, 2, MPI_COMM_WORLD, req)
      call MPI_Wait(req, MPI_STATUS_IGNORE)
      call MPI_Send(buf, 4, MPI_INTEGER, partner, 3, MPI_COMM_WORLD)
    else
      call MPI_Mprobe(partner, 1, MPI_COMM_WORLD, msg, st)
      call MPI_Get_count(st, MPI_INTEGER, cnt)
      call MPI_Mrecv(buf, cnt, MPI_INTEGER, msg, MPI_STATUS_IGNORE)
      flag = .false.
      do while (.not. flag)
        call MPI_Improbe(MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, flag, msg, st)
      end do
      call MPI_Imrecv(buf, big, MPI_INTEGER, msg, req)
      call MPI_Wait(req, MPI_STATUS_IGNORE)
      call MPI_Mprobe(MPI_ANY_SOURCE, 3, MPI_COMM_WORLD, msg, st)
      call MPI_Mrecv(buf, 4, MPI_INTEGER, msg, MPI_STATUS_IGNORE)
    end if
    ! Probes of MPI_PROC_NULL: MPI_MESSAGE_NO_PROC, received at once.
    call MPI_Mprobe(MPI_PROC_NULL, 7, MPI_COMM_WORLD, msg, st)
    call MPI_Mrecv(buf, 4, MPI_INTEGER, msg, MPI_STATUS_IGNORE)
    call MPI_Improbe(MPI_PROC_NULL, 7, MPI_COMM_WORLD, flag, msg, st)
    call MPI_Imrecv(buf, 4, MPI_INTEGER, msg, req)
    call MPI_Wait(req, MPI_STATUS_IGNORE)
    call MPI_Probe(MPI_PROC_NULL, 7, MPI_COMM_WORLD, st)
    call MPI_Issend(buf, 4, MPI_INTEGER, MPI_PROC_NULL, 7, MPI_COMM_WORLD, req)
    call MPI_Wait(req, MPI_STATUS_IGNORE)
    ! Large messages received after MPI_Probe: the size comes from the
    ! status.
    if (rank == 0) then
      do src = 1, size - 1
        call MPI_Probe(MPI_ANY_SOURCE, 6, MPI_COMM_WORLD, st)
        call MPI_Get_count(st, MPI_INTEGER, cnt)
        call MPI_Recv(buf, cnt, MPI_INTEGER, st%MPI_SOURCE, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
      end do
    else
      call MPI_Issend(buf, big, MPI_INTEGER, 0, 6, MPI_COMM_WORLD, req)
      call MPI_Wait(req, MPI_STATUS_IGNORE)
    end if
  end subroutine pickle5
end program families
