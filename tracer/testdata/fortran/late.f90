! A late sender of known delay, for dtpa: rank 0 sleeps 0.2 s before its
! send, so rank 1 waits in MPI_Recv (Real Sync). Both print the time
! (SYSTEM_CLOCK, CLOCK_MONOTONIC in gfortran: one clock for the ranks of one
! host) at which they call, so that the test compares dtpa with the
! program's own measure of the wait.
program flate
  use mpi_f08
  use, intrinsic :: iso_c_binding, only: c_int
  implicit none
  interface
    integer(c_int) function usleep(us) bind(C, name="usleep")
      import :: c_int
      integer(c_int), value :: us
    end function usleep
  end interface
  integer :: rank, buf(16), rc
  integer(8) :: t, rate
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  buf = rank
  call MPI_Barrier(MPI_COMM_WORLD)
  if (rank == 0) then
    rc = usleep(200000_c_int)
    call system_clock(t, rate)
    call MPI_Send(buf, 16, MPI_INTEGER, 1, 5, MPI_COMM_WORLD) ! @latesend
    print '(a,i0,1x,i0)', 'SEND ', t, rate
  else if (rank == 1) then
    call system_clock(t, rate)
    call MPI_Recv(buf, 16, MPI_INTEGER, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE) ! @laterecv
    print '(a,i0,1x,i0)', 'RECV ', t, rate
  end if
  call MPI_Finalize()
end program flate
