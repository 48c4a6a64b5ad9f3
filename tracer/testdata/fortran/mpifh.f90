! Fortran MPI through mpif.h: ping-pong (one receive with MPI_STATUS_IGNORE)
! inside interval 1, a ring exchange completed by MPI_Waitall with
! MPI_STATUSES_IGNORE, an MPI_Allreduce on a split communicator.
! fortran_test.go checks every call, and that its call site is the line
! marked "! @name".
program fmpifh
  implicit none
  include 'mpif.h'
  integer :: ierr, rank, nprocs, i, left, right, sub
  integer :: st(MPI_STATUS_SIZE), reqs(2)
  double precision :: a(4), b(4), x, y
  call MPI_Init(ierr) ! @init
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  a = rank
  call MPI_Pcontrol(100001) ! @enter
  do i = 1, 5
    if (rank == 0) then
      call MPI_Send(a, 4, MPI_DOUBLE_PRECISION, 1, 10, MPI_COMM_WORLD, ierr) ! @send
      call MPI_Recv(b, 4, MPI_DOUBLE_PRECISION, 1, 11, MPI_COMM_WORLD, st, ierr) ! @recv
    else if (rank == 1) then
      call MPI_Recv(b, 4, MPI_DOUBLE_PRECISION, 0, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr) ! @recvignore
      call MPI_Send(b, 4, MPI_DOUBLE_PRECISION, 0, 11, MPI_COMM_WORLD, ierr) ! @sendback
    end if
  end do
  call MPI_Pcontrol(101001) ! @leave
  left = mod(rank + nprocs - 1, nprocs)
  right = mod(rank + 1, nprocs)
  call MPI_Irecv(b, 4, MPI_DOUBLE_PRECISION, left, 20, MPI_COMM_WORLD, reqs(1), ierr) ! @irecv
  call MPI_Isend(a, 4, MPI_DOUBLE_PRECISION, right, 20, MPI_COMM_WORLD, reqs(2), ierr) ! @isend
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr) ! @waitall
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, sub, ierr) ! @split
  x = rank
  call MPI_Allreduce(x, y, 1, MPI_DOUBLE_PRECISION, MPI_SUM, sub, ierr) ! @allreduce
  if (y /= dble(2 * mod(rank, 2) + 2)) call MPI_Abort(MPI_COMM_WORLD, 3, ierr)
  call MPI_Comm_free(sub, ierr)
  call MPI_Finalize(ierr) ! @finalize
end program fmpifh
