! Consumer of an installed petacomm's transposes (Fortran 2008, `use petacomm`): slab
! transposes of every kind (out of place and in place, forward and back), a 3-D pencil round
! trip, the three Fourier filter variants, the registry and a bad argument. Every element is
! checked against the value its global indices give, with the block layout computed here.
program transpose_f
  use, intrinsic :: iso_fortran_env, only: int64, real32, real64
  use mpi
  use petacomm
  implicit none
  integer, parameter :: n0 = 7, n1 = 5
  real(real64), parameter :: two_pi = 2 * acos(-1.0_real64)
  type(petacomm_transpose_plan) :: plan
  type(petacomm_transpose_local) :: local
  type(petacomm_transpose_stats) :: stats
  complex(real64), allocatable, target :: z(:, :), buffer(:)
  complex(real64), pointer :: z_in(:, :), z_out(:, :)
  complex(real64), allocatable :: wrong(:, :)
  complex(real32), allocatable :: c_in(:, :), c_out(:, :)
  real(real64), allocatable :: d_in(:, :), d_out(:, :)
  real(real32), allocatable, target :: s_buffer(:, :)
  real(real32), pointer :: s_in(:, :, :), s_out(:, :, :)
  character(len=:), allocatable :: strategy, description, name, summary, options, registry
  integer :: rank, size, ierr, status, errors, checked, i, j, k, r, strategies

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  errors = 0
  checked = 0

  ! complex128, pairwise: forward out of place, then back in place through two views of one
  ! buffer of alloc_elements elements.
  call petacomm_transpose_plan_create(MPI_COMM_WORLD, [n0, n1], PETACOMM_TRANSPOSE_COMPLEX128, &
                                      plan, status, strategy="pairwise")
  call check("create complex128")
  call petacomm_transpose_plan_local(plan, local, status)
  call check("local")
  if (local%rows_in /= count_of(n0, rank, size) .or. &
      local%row0_in /= offset_of(n0, rank, size) .or. &
      local%rows_out /= count_of(n1, rank, size) .or. &
      local%row0_out /= offset_of(n1, rank, size) .or. &
      local%alloc_elements /= max(count_of(n0, rank, size) * n1, count_of(n1, rank, size) * n0)) &
    errors = errors + 1
  allocate (z(n1, local%rows_in), buffer(local%alloc_elements))
  do i = 1, int(local%rows_in)
    do j = 1, n1
      z(j, i) = element(int(local%row0_in) + i - 1, j - 1)
    end do
  end do
  z_out(1:n0, 1:local%rows_out) => buffer
  call petacomm_transpose_execute(plan, PETACOMM_TRANSPOSE_FORWARD, z, z_out, status)
  call check("forward complex128")
  call check_transposed_z(z_out)
  z_in(1:n1, 1:local%rows_in) => buffer
  call petacomm_transpose_execute(plan, PETACOMM_TRANSPOSE_BACKWARD, z_out, z_in, status)
  call check("backward in place")
  errors = errors + count(z_in /= z)
  checked = checked + int(local%rows_in) * n1
  call petacomm_transpose_plan_strategy(plan, strategy, status)
  call check("strategy")
  call petacomm_transpose_plan_describe(plan, description, status)
  call check("describe")
  if (index(description, '"slab"') == 0) errors = errors + 1

  ! Pairwise sends one message to every other rank whose block is not empty: this rank's
  ! rows x that rank's columns, 16 bytes each.
  call petacomm_transpose_plan_stats(plan, stats, status)
  call check("stats")
  if (nint(stats%messages%max) /= maxval([(count([(count_of(n0, r, size) > 0 .and. &
      count_of(n1, i, size) > 0 .and. i /= r, i = 0, size - 1)]), r = 0, size - 1)])) &
    errors = errors + 1
  if (nint(stats%bytes%max) /= maxval([(16 * count_of(n0, r, size) * (n1 - count_of(n1, r, size)), &
                                        r = 0, size - 1)])) errors = errors + 1

  ! A bad argument on the last rank (out one row too long): every rank fails, before
  ! anything is sent, and nothing is written; the message names the argument, on the other
  ! ranks the rank at fault.
  allocate (wrong(n0 + merge(1, 0, rank == size - 1), local%rows_out))
  wrong = (-1, -1)
  call petacomm_transpose_execute(plan, PETACOMM_TRANSPOSE_FORWARD, z, wrong, status)
  if (status /= PETACOMM_ERR_ARG .or. any(wrong /= (-1, -1))) errors = errors + 1
  if (rank == size - 1) then
    if (index(petacomm_last_error(), "out: shape (") == 0) errors = errors + 1
  else
    if (index(petacomm_last_error(), "rank ") == 0 .or. &
        index(petacomm_last_error(), "out: shape (") == 0) errors = errors + 1
  end if
  call petacomm_transpose_plan_free(plan, status)
  call check("free")

  ! real32, two values per element: forward in place, (howmany, columns, rows) arrays.
  call petacomm_transpose_plan_create(MPI_COMM_WORLD, [n0, n1], PETACOMM_TRANSPOSE_FLOAT32, &
                                      plan, status, howmany=2)
  call check("create real32")
  call petacomm_transpose_plan_local(plan, local, status)
  allocate (s_buffer(2, local%alloc_elements))
  s_in(1:2, 1:n1, 1:local%rows_in) => s_buffer
  do i = 1, int(local%rows_in)
    do j = 1, n1
      do k = 1, 2
        s_in(k, j, i) = real(element_real(int(local%row0_in) + i - 1, j - 1, k), real32)
      end do
    end do
  end do
  s_out(1:2, 1:n0, 1:local%rows_out) => s_buffer
  call petacomm_transpose_execute(plan, PETACOMM_TRANSPOSE_FORWARD, s_in, s_out, status)
  call check("forward real32 in place")
  do j = 1, int(local%rows_out)
    do i = 1, n0
      do k = 1, 2
        if (s_out(k, i, j) /= real(element_real(i - 1, int(local%row0_out) + j - 1, k), &
                                   real32)) errors = errors + 1
        checked = checked + 1
      end do
    end do
  end do
  call petacomm_transpose_plan_free(plan, status)

  ! real64, forward out of place, filter-aware: the columns outside the mask (the odd ones,
  ! 0-based) arrive as zeros, the partial strategy does not send them.
  call petacomm_transpose_plan_create(MPI_COMM_WORLD, [n0, n1], PETACOMM_TRANSPOSE_FLOAT64, &
                                      plan, status, strategy="partial", &
                                      mask=[(mod(j, 2) == 0, j = 0, n1 - 1)])
  call check("create real64")
  call petacomm_transpose_plan_local(plan, local, status)
  allocate (d_in(n1, local%rows_in), d_out(n0, local%rows_out))
  do i = 1, int(local%rows_in)
    do j = 1, n1
      d_in(j, i) = element_real(int(local%row0_in) + i - 1, j - 1, 1)
    end do
  end do
  call petacomm_transpose_execute(plan, PETACOMM_TRANSPOSE_FORWARD, d_in, d_out, status)
  call check("forward real64")
  do j = 1, int(local%rows_out)
    do i = 1, n0
      k = int(local%row0_out) + j - 1  ! the input's column
      if (d_out(i, j) /= merge(element_real(i - 1, k, 1), 0.0_real64, mod(k, 2) == 0)) &
        errors = errors + 1
      checked = checked + 1
    end do
  end do
  call petacomm_transpose_plan_free(plan, status)

  ! complex64, the planner's choice: backward out of place (the n1 x n0 array to n0 x n1).
  call petacomm_transpose_plan_create(MPI_COMM_WORLD, [n0, n1], PETACOMM_TRANSPOSE_COMPLEX64, &
                                      plan, status)
  call check("create complex64")
  call petacomm_transpose_plan_local(plan, local, status)
  allocate (c_in(n0, local%rows_out), c_out(n1, local%rows_in))
  do j = 1, int(local%rows_out)
    do i = 1, n0
      c_in(i, j) = cmplx(element(i - 1, int(local%row0_out) + j - 1), kind=real32)
    end do
  end do
  call petacomm_transpose_execute(plan, PETACOMM_TRANSPOSE_BACKWARD, c_in, c_out, status)
  call check("backward complex64")
  do i = 1, int(local%rows_in)
    do j = 1, n1
      if (c_out(j, i) /= cmplx(element(int(local%row0_in) + i - 1, j - 1), kind=real32)) &
        errors = errors + 1
      checked = checked + 1
    end do
  end do
  call petacomm_transpose_plan_free(plan, status)

  call pencil_round_trip()
  call filters()

  ! The registry, 1-based.
  call petacomm_transpose_strategy_count(strategies, status)
  call check("strategy count")
  registry = ""
  do i = 1, strategies
    call petacomm_transpose_strategy_info(i, name, summary, options, status)
    call check("strategy info")
    if (len(summary) == 0) errors = errors + 1
    registry = registry // merge(",", " ", i > 1) // name
  end do
  registry = trim(adjustl(registry))

  write (*, '(a, i0, a, i0, a, a, a, i0, a, i0, a, a)') "transpose_f rank ", rank, " of ", &
    size, ": strategy ", strategy, " checked ", checked, " errors ", errors, &
    " registry ", registry
  call MPI_Finalize(ierr)
  if (errors /= 0) error stop 1

contains

  ! The block distribution of docs/transpose.md: the first n mod p ranks hold one more.
  integer function count_of(n, r, p)
    integer, intent(in) :: n, r, p
    count_of = n / p + merge(1, 0, r < mod(n, p))
  end function count_of

  integer function offset_of(n, r, p)
    integer, intent(in) :: n, r, p
    offset_of = r * (n / p) + min(r, mod(n, p))
  end function offset_of

  ! Element (i, j) of the global n0 x n1 array (0-based).
  complex(real64) function element(i, j)
    integer, intent(in) :: i, j
    element = cmplx(i, -10 * j, real64)
  end function element

  real(real64) function element_real(i, j, k)
    integer, intent(in) :: i, j, k
    element_real = 100 * i + j + 0.25_real64 * k
  end function element_real

  ! out(i, j) holds row j of the transpose (global row0_out + j - 1), column i - 1.
  subroutine check_transposed_z(out)
    complex(real64), intent(in) :: out(:, :)
    do j = 1, int(local%rows_out)
      do i = 1, n0
        if (out(i, j) /= element(i - 1, int(local%row0_out) + j - 1)) errors = errors + 1
        checked = checked + 1
      end do
    end do
  end subroutine check_transposed_z

  ! The process grid: grid(1) the largest divisor of size not above its square root.
  function grid_of() result(grid)
    integer :: grid(2), d
    grid = [1, size]
    do d = 1, size
      if (d * d <= size .and. mod(size, d) == 0) grid = [d, size / d]
    end do
  end function grid_of

  ! Z -> Y -> X -> Y -> Z on a 5 x 6 x 4 real64 array (C order n0 x n1 x n2); a(i0, i1, i2)
  ! = 10000 i0 + 100 i1 + i2, checked in each layout from the global indices of each element.
  subroutine pencil_round_trip()
    integer, parameter :: n(3) = [5, 6, 4]
    type(petacomm_transpose_pencil) :: pencil
    integer(int64) :: shape(3, 0:2), offset(3, 0:2)
    real(real64), allocatable :: zs(:, :, :), ys(:, :, :), xs(:, :, :), back(:, :, :)
    integer :: layout, a, b, c, grid(2), i0, i1

    grid = grid_of()
    call petacomm_transpose_pencil_create(MPI_COMM_WORLD, n, grid, PETACOMM_TRANSPOSE_FLOAT64, &
                                          pencil, status)
    call check("pencil create")
    do layout = 0, 2
      call petacomm_transpose_pencil_local(pencil, layout, shape(:, layout), &
                                           offset(:, layout), status)
      call check("pencil local")
    end do
    ! Fortran order: Z (n2, n1 block, n0 block), Y (n1, n2 block, n0 block), X (n0, n1
    ! block, n2 block); rank = i0 grid(2) + i1 holds block i0 of grid(1), i1 of grid(2).
    i0 = rank / grid(2)
    i1 = mod(rank, grid(2))
    if (any(shape(:, 0) /= [n(3), count_of(n(2), i1, grid(2)), count_of(n(1), i0, grid(1))]) &
        .or. any(shape(:, 1) /= [n(2), count_of(n(3), i1, grid(2)), &
                                 count_of(n(1), i0, grid(1))]) &
        .or. any(shape(:, 2) /= [n(1), count_of(n(2), i0, grid(1)), &
                                 count_of(n(3), i1, grid(2))]) &
        .or. any(offset(:, 0) /= [0, offset_of(n(2), i1, grid(2)), offset_of(n(1), i0, grid(1))]) &
        .or. any(offset(:, 1) /= [0, offset_of(n(3), i1, grid(2)), offset_of(n(1), i0, grid(1))]) &
        .or. any(offset(:, 2) /= [0, offset_of(n(2), i0, grid(1)), offset_of(n(3), i1, grid(2))])) &
      errors = errors + 1
    allocate (zs(shape(1, 0), shape(2, 0), shape(3, 0)))
    allocate (ys(shape(1, 1), shape(2, 1), shape(3, 1)))
    allocate (xs(shape(1, 2), shape(2, 2), shape(3, 2)))
    allocate (back, mold=zs)
    do c = 1, int(shape(3, 0))
      do b = 1, int(shape(2, 0))
        do a = 1, int(shape(1, 0))
          zs(a, b, c) = at(int(offset(3, 0)) + c, int(offset(2, 0)) + b, a)
        end do
      end do
    end do
    call petacomm_transpose_pencil_execute(pencil, PETACOMM_PENCIL_Z, PETACOMM_PENCIL_Y, zs, &
                                           ys, status)
    call check("pencil z -> y")
    do c = 1, int(shape(3, 1))
      do b = 1, int(shape(2, 1))
        do a = 1, int(shape(1, 1))
          if (ys(a, b, c) /= at(int(offset(3, 1)) + c, a, int(offset(2, 1)) + b)) &
            errors = errors + 1
          checked = checked + 1
        end do
      end do
    end do
    call petacomm_transpose_pencil_execute(pencil, PETACOMM_PENCIL_Y, PETACOMM_PENCIL_X, ys, &
                                           xs, status)
    call check("pencil y -> x")
    do c = 1, int(shape(3, 2))
      do b = 1, int(shape(2, 2))
        do a = 1, int(shape(1, 2))
          if (xs(a, b, c) /= at(a, int(offset(2, 2)) + b, int(offset(3, 2)) + c)) &
            errors = errors + 1
          checked = checked + 1
        end do
      end do
    end do
    ys = -1
    call petacomm_transpose_pencil_execute(pencil, PETACOMM_PENCIL_X, PETACOMM_PENCIL_Y, xs, &
                                           ys, status)
    call check("pencil x -> y")
    call petacomm_transpose_pencil_execute(pencil, PETACOMM_PENCIL_Y, PETACOMM_PENCIL_Z, ys, &
                                           back, status)
    call check("pencil y -> z")
    errors = errors + count(back /= zs)
    checked = checked + int(product(shape(:, 0)))
    call petacomm_transpose_pencil_free(pencil, status)
    call check("pencil free")
  end subroutine pencil_round_trip

  ! The value at 1-based global indices (i0, i1, i2).
  real(real64) function at(i0, i1, i2)
    integer, intent(in) :: i0, i1, i2
    at = 10000 * (i0 - 1) + 100 * (i1 - 1) + (i2 - 1)
  end function at

  ! f(s, chi, phi) = (s + 1) [cos 2pi(chi/8 + phi/8) + cos 2pi(3 chi/8) / 2 + cos 2pi(2 phi/8)
  ! / 4] on 2 x 8 x 8, keeping |m| <= 2, |n| <= 1: only the first term remains.
  subroutine filters()
    type(petacomm_fftfilter) :: filter
    type(petacomm_fftfilter_stats) :: fstats
    integer(int64) :: shape(3), offset(3)
    real(real64), allocatable, target :: field(:, :, :)
    real(real64), allocatable :: kept(:, :, :)
    real(real64) :: phi, chi
    integer :: variant, a, b, c, grid(2), i_s, i_chi

    grid = grid_of()
    i_s = rank / grid(2)
    i_chi = mod(rank, grid(2))
    do variant = PETACOMM_FFTFILTER_PLAIN, PETACOMM_FFTFILTER_PACKED_PARTIAL
      call petacomm_fftfilter_create(MPI_COMM_WORLD, [2, 8, 8], grid, [2, 1], variant, &
                                     filter, status)
      call check("filter create")
      call petacomm_fftfilter_local(filter, shape, offset, status)
      call check("filter local")
      if (any(shape /= [8, count_of(8, i_chi, grid(2)), count_of(2, i_s, grid(1))]) .or. &
          any(offset /= [0, offset_of(8, i_chi, grid(2)), offset_of(2, i_s, grid(1))])) &
        errors = errors + 1
      allocate (field(shape(1), shape(2), shape(3)), kept(shape(1), shape(2), shape(3)))
      do c = 1, int(shape(3))
        do b = 1, int(shape(2))
          do a = 1, int(shape(1))
            phi = two_pi * (offset(1) + a - 1) / 8
            chi = two_pi * (offset(2) + b - 1) / 8
            field(a, b, c) = (offset(3) + c) * (cos(chi + phi) + cos(3 * chi) / 2 + &
                                                cos(2 * phi) / 4)
            kept(a, b, c) = (offset(3) + c) * cos(chi + phi)
          end do
        end do
      end do
      call petacomm_fftfilter_apply(filter, field, field, status) ! in place
      call check("filter apply")
      errors = errors + count(abs(field - kept) > 1e-12_real64)
      checked = checked + int(product(shape))
      call petacomm_fftfilter_stats_get(filter, fstats, status)
      if (status /= PETACOMM_SUCCESS .or. fstats%applications /= 1) errors = errors + 1
      call petacomm_fftfilter_free(filter, status)
      call check("filter free")
      deallocate (field, kept)
    end do
  end subroutine filters

  subroutine check(what)
    character(len=*), intent(in) :: what
    if (status /= PETACOMM_SUCCESS) then
      write (*, '(a, a, a, a)') "transpose_f: ", what, ": ", petacomm_last_error()
      call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
    end if
  end subroutine check
end program transpose_f
