! Call stacks of optimised Fortran (built -O2 -fno-inline by tracer/stacks_test.go): the
! ranks exchange in pairs (0-1, 2-3) through a chain of helpers, each called
! from two sites, so that every MPI_SENDRECV has one of 16 stacks
! program > top > mid2 > mid1 > exch, which the tracer must tell apart frame
! by frame. -fno-inline keeps each helper a frame of its own (GCC 12 has no
! NOINLINE attribute for Fortran).
module deep
  use mpi
  implicit none
  integer :: peer, sink = 0
  double precision :: total = 0
contains
  subroutine exch(x)
    integer, intent(in) :: x
    double precision :: out(4), in(4)
    integer :: ierr
    out = x
    ! gfortran's line table puts the call on its last line
    call MPI_SENDRECV(out, 4, MPI_DOUBLE_PRECISION, peer, x, in, 4, MPI_DOUBLE_PRECISION, peer, x, &
                      MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr) ! @exch
    total = total + in(1)
  end subroutine exch

  subroutine mid1(x)
    integer, intent(in) :: x
    call exch(x) ! @mid1a
    sink = sink + 1
    call exch(x + 1) ! @mid1b
    sink = sink + 1
  end subroutine mid1

  subroutine mid2(x)
    integer, intent(in) :: x
    call mid1(x) ! @mid2a
    sink = sink + 1
    call mid1(x + 2) ! @mid2b
    sink = sink + 1
  end subroutine mid2

  subroutine top(x)
    integer, intent(in) :: x
    call mid2(x) ! @topa
    sink = sink + 1
    call mid2(x + 4) ! @topb
    sink = sink + 1
  end subroutine top
end module deep

program deepstack
  use deep
  implicit none
  integer :: ierr, rank, i
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  peer = ieor(rank, 1)
  do i = 1, 3
    call top(0) ! @maina
    sink = sink + 1
    call top(8) ! @mainb
    sink = sink + 1
  end do
  print '(a,i0,a,f0.0)', 'rank ', rank, ': total=', total
  call MPI_FINALIZE(ierr)
end program deepstack
