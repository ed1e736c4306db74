! Consumer of an installed petacomm (Fortran 2008, `use petacomm`): the reduction of reduce.c
! for every value kind, checked against a plain loop over every rank's keys and values.
program reduce_f
  use, intrinsic :: iso_fortran_env, only: int32, int64, real32, real64
  use mpi
  use petacomm
  implicit none
  integer, parameter :: n = 5
  type(petacomm_xchg_plan) :: plan
  integer(int64) :: keys(n)
  real(real64) :: r64(2, n)
  real(real32) :: r32(n)
  integer(int32) :: i32(n)
  integer(int64) :: i64(2, n)
  complex(real32) :: c64(n)
  complex(real64) :: c128(n)
  character(len=:), allocatable :: strategy, description
  integer :: rank, size, ierr, status, errors, i, c

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  keys = keys_of(rank)
  do i = 1, n
    do c = 1, 2
      r64(c, i) = value_of(rank, i, c)
      i64(c, i) = int(value_of(rank, i, c), int64)
    end do
    r32(i) = real(value_of(rank, i, 1), real32)
    i32(i) = int(value_of(rank, i, 1), int32)
    c64(i) = cmplx(value_of(rank, i, 1), -value_of(rank, i, 1), real32)
    c128(i) = cmplx(value_of(rank, i, 1), -value_of(rank, i, 1), real64)
  end do

  call petacomm_xchg_plan_create(MPI_COMM_WORLD, keys, plan, status, strategy="owner")
  call check("create")
  call petacomm_xchg_execute(plan, r64, PETACOMM_XCHG_SUM, status)
  call check("real64")
  call petacomm_xchg_execute(plan, r32, PETACOMM_XCHG_SUM, status)
  call check("real32")
  call petacomm_xchg_execute(plan, i32, PETACOMM_XCHG_SUM, status)
  call check("int32")
  call petacomm_xchg_execute(plan, i64, PETACOMM_XCHG_SUM, status)
  call check("int64")
  call petacomm_xchg_execute(plan, c64, PETACOMM_XCHG_SUM, status)
  call check("complex64")
  call petacomm_xchg_execute(plan, c128, PETACOMM_XCHG_SUM, status)
  call check("complex128")
  call petacomm_xchg_plan_strategy(plan, strategy, status)
  call check("strategy")
  call petacomm_xchg_plan_describe(plan, description, status)
  call check("describe")

  errors = 0
  if (index(description, '"strategy"') == 0) errors = errors + 1
  do i = 1, n
    errors = errors + count([(r64(c, i) /= expected(keys(i), c), c = 1, 2)])
    errors = errors + count([(i64(c, i) /= int(expected(keys(i), c), int64), c = 1, 2)])
    if (r32(i) /= real(expected(keys(i), 1), real32)) errors = errors + 1
    if (i32(i) /= int(expected(keys(i), 1), int32)) errors = errors + 1
    if (c64(i) /= cmplx(expected(keys(i), 1), -expected(keys(i), 1), real32)) errors = errors + 1
    if (c128(i) /= cmplx(expected(keys(i), 1), -expected(keys(i), 1), real64)) errors = errors + 1
  end do

  ! A bad argument: an error code and a message naming it, the values untouched.
  call petacomm_xchg_execute(plan, r32, 99, status)
  if (status /= PETACOMM_ERR_ARG .or. index(petacomm_last_error(), "op") == 0) errors = errors + 1
  if (r32(1) /= real(expected(keys(1), 1), real32)) errors = errors + 1

  write (*, '(a, i0, a, i0, a, a, 7(a, i0), a, i0)') "reduce_f rank ", rank, " of ", size, &
    ": strategy ", strategy, " key7 ", nint(r64(1, 1), int64), &
    " real64 ", nint(sum(r64), int64), " real32 ", nint(sum(r32), int64), &
    " int32 ", sum(int(i32, int64)), " int64 ", sum(i64), &
    " complex64 ", nint(sum(real(c64)) - sum(aimag(c64)), int64), &
    " complex128 ", nint(sum(real(c128)) - sum(aimag(c128)), int64), " errors ", errors
  call petacomm_xchg_plan_free(plan, status)
  call check("free")
  call MPI_Finalize(ierr)
  if (errors /= 0) error stop 1

contains

  ! Rank r of size holds keys 7 (twice), its own, its right neighbour's, and a private one.
  function keys_of(r) result(k)
    integer, intent(in) :: r
    integer(int64) :: k(n)
    k = [7_int64, 1000_int64 + r, 1000_int64 + mod(r + 1, size), 7_int64, 20_int64 + 3 * r]
  end function keys_of

  ! Signs alternate: reinterpreting the bits as another kind cannot give the same sums.
  real(real64) function value_of(r, i, c)
    integer, intent(in) :: r, i, c
    value_of = (r + 1) * merge(-10, 10, mod(i - 1, 2) == 1) + (i - 1) + 100 * (c - 1)
  end function value_of

  ! Every rank's contributions to key, component c.
  real(real64) function expected(key, c)
    integer(int64), intent(in) :: key
    integer, intent(in) :: c
    integer(int64) :: other(n)
    integer :: q, j
    expected = 0
    do q = 0, size - 1
      other = keys_of(q)
      do j = 1, n
        if (other(j) == key) expected = expected + value_of(q, j, c)
      end do
    end do
  end function expected

  subroutine check(what)
    character(len=*), intent(in) :: what
    if (status /= PETACOMM_SUCCESS) then
      write (*, '(a, a, a, a)') "reduce_f: ", what, ": ", petacomm_last_error()
      call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
    end if
  end subroutine check
end program reduce_f
