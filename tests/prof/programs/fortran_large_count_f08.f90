! MPI-4 large counts through `use mpi_f08`: every count below is an
! integer(MPI_COUNT_KIND), so the generic MPI_Isend resolves to the large-count procedure
! (MPICH 4: mpi_isend_f08ts_large_, which calls the C MPI_Isend_c). Per rank r of p, with
! right = r+1 and left = r-1 (mod p):
!   region fortran_ring, 2 iterations: MPI_Isend_c of 100 float64 to right, MPI_Recv_c of
!     100 float64 from left, MPI_Wait;
!   MPI_Allreduce_c of 3 float64 in place; MPI_Bcast_c of 5 integers from rank 0;
!   MPI_Irecv_c of 2 float64 from MPI_ANY_SOURCE (left sends them), MPI_Isend_c of 2
!     float64 to right, MPI_Waitall.
program fortran_large_count_f08
  use mpi_f08
  use iso_c_binding
  implicit none
  include 'pcontrol_interface.inc'
  integer :: ierr, rank, nranks, right, left, it, five(5), failures
  integer(kind=MPI_COUNT_KIND) :: n, received
  type(MPI_Request) :: req, reqs(2)
  type(MPI_Status) :: status
  double precision :: out(100), in(100), sums(3), a(2), b(2)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  right = mod(rank + 1, nranks)
  left = mod(rank - 1 + nranks, nranks)
  failures = 0

  ierr = pcontrol(1_c_int, "fortran_ring"//c_null_char)
  n = 100
  do it = 1, 2
    out = rank * 1000 + it
    call MPI_Isend(out, n, MPI_DOUBLE_PRECISION, right, 1, MPI_COMM_WORLD, req)
    call MPI_Recv(in, n, MPI_DOUBLE_PRECISION, left, 1, MPI_COMM_WORLD, status)
    call MPI_Wait(req, MPI_STATUS_IGNORE)
    call MPI_Get_count(status, MPI_DOUBLE_PRECISION, received)
    if (received /= 100 .or. in(50) /= left * 1000 + it) failures = failures + 1
  end do
  ierr = pcontrol(-1_c_int, "fortran_ring"//c_null_char)

  sums = rank + 1
  n = 3
  call MPI_Allreduce(MPI_IN_PLACE, sums, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
  if (sums(3) /= nranks * (nranks + 1) / 2) failures = failures + 1
  five = rank
  n = 5
  call MPI_Bcast(five, n, MPI_INTEGER, 0, MPI_COMM_WORLD)
  if (five(5) /= 0) failures = failures + 1
  a = rank
  n = 2
  call MPI_Irecv(b, n, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, reqs(1))
  call MPI_Isend(a, n, MPI_DOUBLE_PRECISION, right, 5, MPI_COMM_WORLD, reqs(2))
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
  if (b(2) /= left) failures = failures + 1
  call MPI_Finalize()
  if (rank == 0) print '(a,i0,a,i0)', 'fortran_large_count_f08: ranks ', nranks, &
    ' failures ', failures
  if (failures /= 0) stop 1
end program fortran_large_count_f08
