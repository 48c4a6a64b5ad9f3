! Polling loops in Fortran (use mpi), for the tracer's folding of
! unsuccessful tests and probes: odd ranks compute ~20 ms (system_clock, no
! MPI call) before each send, even ranks poll for it with MPI_Test (status
! ignored) and then MPI_Iprobe, and print how many calls each loop made.
program fpolls
  use mpi
  implicit none
  integer :: ierr, rank, peer, req, v, ntest, nprobe
  integer :: st(MPI_STATUS_SIZE)
  logical :: flag
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  peer = ieor(rank, 1)
  v = rank
  if (mod(rank, 2) == 1) then
    call spin()
    call MPI_Send(v, 1, MPI_INTEGER, peer, 1, MPI_COMM_WORLD, ierr)
    call spin()
    call MPI_Send(v, 1, MPI_INTEGER, peer, 2, MPI_COMM_WORLD, ierr)
  else
    call MPI_Irecv(v, 1, MPI_INTEGER, peer, 1, MPI_COMM_WORLD, req, ierr)
    ntest = 0
    flag = .false.
    do while (.not. flag)
      call MPI_Test(req, flag, MPI_STATUS_IGNORE, ierr)
      ntest = ntest + 1
    end do
    nprobe = 0
    flag = .false.
    do while (.not. flag)
      call MPI_Iprobe(peer, 2, MPI_COMM_WORLD, flag, st, ierr)
      nprobe = nprobe + 1
    end do
    call MPI_Recv(v, 1, MPI_INTEGER, peer, 2, MPI_COMM_WORLD, st, ierr)
    print '(A,I0,A,I0,A,I0)', 'rank ', rank, ' tests ', ntest, ' probes ', nprobe
  end if
  call MPI_Finalize(ierr)
contains
  subroutine spin()
    integer(8) :: c0, c, rate
    call system_clock(c0, rate)
    c = c0
    do while (c - c0 < rate / 50)
      call system_clock(c)
    end do
  end subroutine spin
end program fpolls
