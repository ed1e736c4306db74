! The communication of fortran_pattern.f90 (its header lists it per rank) through the
! `use mpi_f08` bindings, the optional `ierror` given on some calls and left out on others,
! MPI_STATUS_IGNORE and a status: every call counted exactly once.
program fortran_pattern_f08
  use mpi_f08
  use iso_c_binding
  implicit none
  include 'pcontrol_interface.inc'
  integer :: ierr, rank, nranks, right, left, it, value, ten(10), failures
  type(MPI_Request) :: reqs(2)
  type(MPI_Status) :: status
  double precision :: out(100), in(100), a(2), b(2)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  right = mod(rank + 1, nranks)
  left = mod(rank - 1 + nranks, nranks)
  failures = 0

  ierr = pcontrol(1_c_int, "fortran_ring"//c_null_char)
  do it = 1, 3
    out = rank * 1000 + it
    if (it == 2) then
      call MPI_Send(out, 100, MPI_DOUBLE_PRECISION, right, 1, MPI_COMM_WORLD, ierr)
      call MPI_Recv(in, 100, MPI_DOUBLE_PRECISION, left, 1, MPI_COMM_WORLD, status, ierr)
      if (status%MPI_SOURCE /= left) failures = failures + 1
    else
      call MPI_Send(out, 100, MPI_DOUBLE_PRECISION, right, 1, MPI_COMM_WORLD)
      call MPI_Recv(in, 100, MPI_DOUBLE_PRECISION, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
    end if
    if (in(50) /= left * 1000 + it) failures = failures + 1
  end do
  ierr = pcontrol(-1_c_int, "fortran_ring"//c_null_char)

  value = rank + 1
  call MPI_Allreduce(MPI_IN_PLACE, value, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (value /= nranks * (nranks + 1) / 2) failures = failures + 1
  call MPI_Allreduce(MPI_IN_PLACE, value, 1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  ten = rank
  call MPI_Bcast(ten, 10, MPI_INTEGER, 0, MPI_COMM_WORLD)
  if (ten(10) /= 0) failures = failures + 1
  a = rank
  call MPI_Irecv(b, 2, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, reqs(1))
  call MPI_Isend(a, 2, MPI_DOUBLE_PRECISION, right, 5, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
  if (b(2) /= left) failures = failures + 1
  call MPI_Barrier(MPI_COMM_WORLD)
  call MPI_Finalize()
  if (rank == 0) print '(a,i0,a,i0)', 'fortran_pattern_f08: ranks ', nranks, ' failures ', failures
  if (failures /= 0) stop 1
end program fortran_pattern_f08
