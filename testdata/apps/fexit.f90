! fexit: rank 1 leaves the job early, right after a barrier (@last), with
! a Fortran runtime error: an index past its array's bound, which
! -fcheck=bounds catches in kernel (@bound); libgfortran prints it and
! calls exit(2). The other ranks wait in MPI_Recv (@wait) for the message
! it never sends.
module work
contains
  subroutine kernel(a, n)
    integer :: a(5), n
    a(n) = 1 ! @bound
  end subroutine
end module

program fexit
  use mpi
  use work
  implicit none
  integer :: ierr, rank, a(5), v
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr) ! @last
  if (rank == 1) call kernel(a, 7)
  if (rank == 0) then
    print '(a)', 'fexit: waiting'
    flush(6)
  end if
  call MPI_Recv(v, 1, MPI_INTEGER, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr) ! @wait
  call MPI_Finalize(ierr)
end program
