! Coarray Fortran (gfortran -fcoarray=lib with OpenCoarrays, which runs on
! MPI), with waits known by construction: after a first SYNC ALL, image k
! computes until k*T has passed on its clock, then all images meet in a
! second SYNC ALL (line 26), where each waits for the last to enter. Every
! image keeps the moment it entered (CLOCK_MONOTONIC, the node's clock),
! and image 1 prints each image's wait, the latest entry less its own: the
! Potential Sync that dtpa must find at line 26 on each rank. A one-sided
! get from the next image and a CO_SUM follow, checked.
program coarray_sync
  implicit none
  integer(8), parameter :: t_ms = 100
  integer(8) :: c0, rate, last
  integer(8) :: entered[*]
  real(8) :: x[*]
  integer :: me, n, k
  me = this_image()
  n = num_images()
  x = me
  sync all
  call system_clock(c0, rate)
  do
    call system_clock(entered)
    if (entered - c0 >= me * t_ms * rate / 1000) exit
  end do
  ! The measured wait:
  sync all
  if (x[mod(me, n) + 1] /= mod(me, n) + 1) error stop "wrong value from the next image"
  sync all ! before CO_SUM changes x, which the previous image reads
  call co_sum(x)
  if (x /= n * (n + 1) / 2) error stop "wrong co_sum"
  if (me == 1) then
    last = entered
    do k = 2, n
      last = max(last, entered[k])
    end do
    do k = 1, n
      print '(a, i0, a, f0.6)', 'coarray_sync: image ', k, ' waits ', real(last - entered[k], 8) / rate
    end do
  end if
end program
