! Transpose a 6 x 4 complex array distributed by rows, check it, transpose it back in place.
program transpose_example
  use, intrinsic :: iso_fortran_env, only: real64
  use mpi
  use petacomm
  implicit none
  integer, parameter :: n0 = 6, n1 = 4
  type(petacomm_transpose_plan) :: plan
  type(petacomm_transpose_local) :: l
  complex(real64), allocatable :: a(:, :)
  complex(real64), allocatable, target :: buffer(:)
  complex(real64), pointer :: b(:, :), back(:, :)
  character(len=:), allocatable :: strategy
  integer :: ierr, status, rank, wrong, total, i, j

  call MPI_Init(ierr)
  call petacomm_transpose_plan_create(MPI_COMM_WORLD, [n0, n1], PETACOMM_TRANSPOSE_COMPLEX128, &
                                      plan, status)
  if (status /= PETACOMM_SUCCESS) then
    print '(2a)', "plan: ", petacomm_last_error()
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  call petacomm_transpose_plan_local(plan, l, status)
  allocate (a(n1, l%rows_in), buffer(l%alloc_elements))
  do i = 1, int(l%rows_in)  ! row i of this rank is global row l%row0_in + i - 1
    do j = 1, n1            ! element (row, column) = row + column I, 0-based global indices
      a(j, i) = cmplx(l%row0_in + i - 1, j - 1, real64)
    end do
  end do
  b(1:n0, 1:l%rows_out) => buffer  ! rows of the n1 x n0 transpose
  call petacomm_transpose_execute(plan, PETACOMM_TRANSPOSE_FORWARD, a, b, status)
  wrong = 0
  do j = 1, int(l%rows_out)
    do i = 1, n0
      if (b(i, j) /= cmplx(i - 1, l%row0_out + j - 1, real64)) wrong = wrong + 1
    end do
  end do
  back(1:n1, 1:l%rows_in) => buffer  ! in place: a second view of the same buffer
  call petacomm_transpose_execute(plan, PETACOMM_TRANSPOSE_BACKWARD, b, back, status)
  wrong = wrong + count(back /= a)
  call petacomm_transpose_plan_strategy(plan, strategy, status)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Allreduce(wrong, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(3a, i0, a)', "strategy ", strategy, ": ", total, " wrong elements"
  call petacomm_transpose_plan_free(plan, status)
  call MPI_Finalize(ierr)
  if (total /= 0) error stop 1
end program transpose_example
