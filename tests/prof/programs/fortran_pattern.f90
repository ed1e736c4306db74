! Known communication through the Fortran bindings (use mpi): every call must be counted
! exactly once whichever way the MPI library routes it (mpi_send_ -> PMPI_Send or MPI_Send).
! Per rank r of P (right = r+1, left = r-1, cyclic):
!   region "fortran_ring": 3 x MPI_Send of 100 doubles (800 B) to right, 3 x MPI_Recv from left
!   MPI_Allreduce in place of 1 integer, twice; MPI_Bcast of 10 integers from rank 0
!   MPI_Irecv (MPI_ANY_SOURCE) + MPI_Isend of 2 doubles (16 B), one MPI_Waitall; MPI_Barrier
program fortran_pattern
  use mpi
  use iso_c_binding
  implicit none
  include 'pcontrol_interface.inc'
  integer :: ierr, rank, nranks, right, left, it, value, ten(10), reqs(2), failures
  double precision :: out(100), in(100), a(2), b(2)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  right = mod(rank + 1, nranks)
  left = mod(rank - 1 + nranks, nranks)
  failures = 0

  ierr = pcontrol(1_c_int, "fortran_ring"//c_null_char)
  do it = 1, 3
    out = rank * 1000 + it
    call MPI_Send(out, 100, MPI_DOUBLE_PRECISION, right, 1, MPI_COMM_WORLD, ierr)
    call MPI_Recv(in, 100, MPI_DOUBLE_PRECISION, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    if (in(50) /= left * 1000 + it) failures = failures + 1
  end do
  ierr = pcontrol(-1_c_int, "fortran_ring"//c_null_char)

  value = rank + 1
  call MPI_Allreduce(MPI_IN_PLACE, value, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (value /= nranks * (nranks + 1) / 2) failures = failures + 1
  call MPI_Allreduce(MPI_IN_PLACE, value, 1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  ten = rank
  call MPI_Bcast(ten, 10, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (ten(10) /= 0) failures = failures + 1
  a = rank
  call MPI_Irecv(b, 2, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Isend(a, 2, MPI_DOUBLE_PRECISION, right, 5, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
  if (b(2) /= left) failures = failures + 1
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Finalize(ierr)
  if (rank == 0) print '(a,i0,a,i0)', 'fortran_pattern: ranks ', nranks, ' failures ', failures
  if (failures /= 0) stop 1
end program fortran_pattern
