! petacomm for Fortran, the distributed transposes (transpose.h): the 2-D slab plan, the 3-D
! pencil plan, the Fourier filter and the strategy registry. Programs `use petacomm`.
!
!   use mpi
!   use petacomm
!   type(petacomm_transpose_plan) :: plan
!   type(petacomm_transpose_local) :: local
!   complex(real64), allocatable :: a(:, :), b(:, :)
!   call petacomm_transpose_plan_create(MPI_COMM_WORLD, [n0, n1], PETACOMM_TRANSPOSE_COMPLEX128, &
!                                       plan, status)                             ! collective
!   call petacomm_transpose_plan_local(plan, local, status)
!   allocate (a(n1, local%rows_in), b(n0, local%rows_out))
!   call petacomm_transpose_execute(plan, PETACOMM_TRANSPOSE_FORWARD, a, b, status) ! collective
!   call petacomm_transpose_plan_free(plan, status)                               ! collective
!
! Layouts are the C API's, row-major, so a Fortran array lists the axes in reverse order:
! the global n0 x n1 array's row i, column j (0-based) is a(j + 1, i - local%row0_in + 1) on
! the rank holding row i; with howmany values per element, a(howmany, n1, rows). In place:
! two pointer views of one buffer of local%alloc_elements (x howmany) elements. Arrays are
! described to the C library as they are (address, extents, strides), and it checks their
! shapes (given in C order in its messages: (rows, columns)), kind and contiguity on every
! rank before anything is sent. Communicators are Fortran handles, as in petacomm_xchg.
! Every routine sets status to PETACOMM_SUCCESS or an error code; petacomm_last_error() then
! names the argument and the value at fault, and nothing was modified. Collective calls
! fail on all ranks together.
module petacomm_transpose
  use, intrinsic :: iso_c_binding, only: c_char, c_double, c_double_complex, c_float, &
                                         c_float_complex, c_int, c_int64_t, c_intptr_t, c_loc, &
                                         c_null_ptr, c_ptr, c_signed_char, c_size_t
  use petacomm_core, only: PETACOMM_SUCCESS, petacomm_c_string, petacomm_f_string, &
                           petacomm_strategy_info
  implicit none
  private

  ! petacomm_transpose_dtype: the element type (complex: real and imaginary parts).
  integer(c_int), parameter, public :: PETACOMM_TRANSPOSE_FLOAT32 = 0
  integer(c_int), parameter, public :: PETACOMM_TRANSPOSE_FLOAT64 = 1
  integer(c_int), parameter, public :: PETACOMM_TRANSPOSE_COMPLEX64 = 2
  integer(c_int), parameter, public :: PETACOMM_TRANSPOSE_COMPLEX128 = 3

  ! petacomm_transpose_direction: forward takes n0 x n1 by rows to n1 x n0 by rows.
  integer(c_int), parameter, public :: PETACOMM_TRANSPOSE_FORWARD = 0
  integer(c_int), parameter, public :: PETACOMM_TRANSPOSE_BACKWARD = 1

  ! petacomm_pencil_layout: named by the axis each rank holds whole.
  integer(c_int), parameter, public :: PETACOMM_PENCIL_Z = 0
  integer(c_int), parameter, public :: PETACOMM_PENCIL_Y = 1
  integer(c_int), parameter, public :: PETACOMM_PENCIL_X = 2

  ! petacomm_fftfilter_variant (docs/transpose.md, "The Fourier filter").
  integer(c_int), parameter, public :: PETACOMM_FFTFILTER_PLAIN = 0
  integer(c_int), parameter, public :: PETACOMM_FFTFILTER_PACKED = 1
  integer(c_int), parameter, public :: PETACOMM_FFTFILTER_PACKED_PARTIAL = 2

  !> The planner's cost parameters (petacomm_transpose_cost_params): seconds, seconds per byte.
  type, bind(C), public :: petacomm_transpose_cost_params
    real(c_double) :: p2p_alpha, p2p_beta
    real(c_double) :: net_alpha, net_beta
    real(c_double) :: node_link_beta
    real(c_double) :: alltoall_alpha, alltoall_beta
    real(c_double) :: copy_beta
    real(c_double) :: transpose_beta
    real(c_double) :: datatype_beta
  end type petacomm_transpose_cost_params

  !> Plan options (petacomm_transpose_options), filled by petacomm_transpose_options_default.
  !> Strategy, planner and mask are C pointers: give them to the create routines instead.
  type, bind(C), public :: petacomm_transpose_options
    type(c_ptr) :: strategy
    type(c_ptr) :: planner
    type(c_ptr) :: mask
    integer(c_int64_t) :: mask_length
    integer(c_int) :: window
    integer(c_int) :: measure_reps
    integer(c_int) :: node_size
    type(petacomm_transpose_cost_params) :: cost
  end type petacomm_transpose_options

  !> This rank's part of a slab plan's layouts (petacomm_transpose_local): rows_in rows of the
  !> forward input from global row row0_in (0-based), rows_out rows of its output from
  !> row0_out; alloc_elements elements hold either (an in-place buffer).
  type, bind(C), public :: petacomm_transpose_local
    integer(c_int64_t) :: rows_in, row0_in
    integer(c_int64_t) :: rows_out, row0_out
    integer(c_int64_t) :: alloc_elements
  end type petacomm_transpose_local

  !> An array as the C library checks it (petacomm_transpose_array): C order, strides in bytes.
  type, bind(C), public :: petacomm_transpose_array
    type(c_ptr) :: data
    integer(c_int) :: ndim
    integer(c_int64_t) :: shape(4)
    integer(c_int64_t) :: strides(4)
    integer(c_int) :: dtype
    integer(c_int) :: writeable
  end type petacomm_transpose_array

  type, bind(C), public :: petacomm_transpose_minavgmax
    real(c_double) :: min, avg, max
  end type petacomm_transpose_minavgmax

  !> Per forward execution, over the plan's ranks (petacomm_transpose_stats): messages and
  !> bytes a rank sends, memory the plan holds (bytes); setup_seconds: creation, max over ranks.
  type, bind(C), public :: petacomm_transpose_stats
    type(petacomm_transpose_minavgmax) :: messages
    type(petacomm_transpose_minavgmax) :: bytes
    type(petacomm_transpose_minavgmax) :: memory_bytes
    real(c_double) :: setup_seconds
  end type petacomm_transpose_stats

  !> This rank's totals over a filter's applications (petacomm_fftfilter_stats): seconds per
  !> phase, bytes and messages its transposes sent.
  type, bind(C), public :: petacomm_fftfilter_stats
    integer(c_int64_t) :: applications
    real(c_double) :: fft_phi_seconds
    real(c_double) :: transpose_seconds
    real(c_double) :: fft_chi_seconds
    real(c_double) :: mask_seconds
    real(c_double) :: total_seconds
    real(c_double) :: bytes_sent
    real(c_double) :: messages_sent
  end type petacomm_fftfilter_stats

  !> A 2-D slab transpose plan (the C handle).
  type, public :: petacomm_transpose_plan
    private
    type(c_ptr) :: handle = c_null_ptr
  end type petacomm_transpose_plan

  !> A 3-D pencil plan: Z <-> Y and Y <-> X swaps on a 2-D process grid.
  type, public :: petacomm_transpose_pencil
    private
    type(c_ptr) :: handle = c_null_ptr
  end type petacomm_transpose_pencil

  !> A Fourier filter of a real field f(s, chi, phi) (NEMORB).
  type, public :: petacomm_fftfilter
    private
    type(c_ptr) :: handle = c_null_ptr
  end type petacomm_fftfilter

  public :: petacomm_transpose_options_default
  public :: petacomm_transpose_strategy_count, petacomm_transpose_strategy_info
  public :: petacomm_transpose_plan_create, petacomm_transpose_plan_free
  public :: petacomm_transpose_plan_local, petacomm_transpose_execute
  public :: petacomm_transpose_plan_strategy, petacomm_transpose_plan_describe
  public :: petacomm_transpose_plan_stats
  public :: petacomm_transpose_pencil_create, petacomm_transpose_pencil_free
  public :: petacomm_transpose_pencil_local, petacomm_transpose_pencil_execute
  public :: petacomm_transpose_pencil_describe
  public :: petacomm_fftfilter_create, petacomm_fftfilter_free, petacomm_fftfilter_local
  public :: petacomm_fftfilter_apply, petacomm_fftfilter_stats_get, petacomm_fftfilter_describe

  !> Transposes (collective): execute(plan, direction, in, out, status) with arrays of
  !> real32, real64, complex(real32) or complex(real64): (columns, rows) when the plan has
  !> one value per element, (howmany, columns, rows) otherwise.
  interface petacomm_transpose_execute
    module procedure execute_real32_2d, execute_real32_3d, execute_real64_2d, &
                     execute_real64_3d, execute_complex64_2d, execute_complex64_3d, &
                     execute_complex128_2d, execute_complex128_3d
  end interface petacomm_transpose_execute

  !> Swaps pencils (collective): pencil_execute(pencil, from, to, in, out, status), arrays of
  !> rank 3 (rank 4, howmany first, when the plan has several values per element).
  interface petacomm_transpose_pencil_execute
    module procedure pencil_execute_real32_3d, pencil_execute_real32_4d, &
                     pencil_execute_real64_3d, pencil_execute_real64_4d, &
                     pencil_execute_complex64_3d, pencil_execute_complex64_4d, &
                     pencil_execute_complex128_3d, pencil_execute_complex128_4d
  end interface petacomm_transpose_pencil_execute

  interface
    function c_options_default(opts) bind(C, name="petacomm_transpose_options_default") &
        result(status)
      import :: c_int, petacomm_transpose_options
      type(petacomm_transpose_options), intent(out) :: opts
      integer(c_int) :: status
    end function c_options_default

    function c_strategy_count(count) bind(C, name="petacomm_transpose_strategy_count") &
        result(status)
      import :: c_int
      integer(c_int), intent(out) :: count
      integer(c_int) :: status
    end function c_strategy_count

    function c_strategy_info(index, info) bind(C, name="petacomm_transpose_strategy_info") &
        result(status)
      import :: c_int, petacomm_strategy_info
      integer(c_int), value :: index
      type(petacomm_strategy_info), intent(out) :: info
      integer(c_int) :: status
    end function c_strategy_info

    function c_plan_create_f(comm, n0, n1, howmany, dtype, opts, plan) &
        bind(C, name="petacomm_transpose_plan_create_f") result(status)
      import :: c_int, c_int64_t, c_ptr, petacomm_transpose_options
      integer(c_int), value :: comm
      integer(c_int64_t), value :: n0, n1, howmany
      integer(c_int), value :: dtype
      type(petacomm_transpose_options), intent(in) :: opts
      type(c_ptr), intent(out) :: plan
      integer(c_int) :: status
    end function c_plan_create_f

    function c_plan_free(plan) bind(C, name="petacomm_transpose_plan_free") result(status)
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: plan
      integer(c_int) :: status
    end function c_plan_free

    function c_plan_local(plan, local) bind(C, name="petacomm_transpose_plan_local") &
        result(status)
      import :: c_int, c_ptr, petacomm_transpose_local
      type(c_ptr), value :: plan
      type(petacomm_transpose_local), intent(out) :: local
      integer(c_int) :: status
    end function c_plan_local

    function c_execute_array(plan, direction, in, out) &
        bind(C, name="petacomm_transpose_execute_array") result(status)
      import :: c_int, c_ptr, petacomm_transpose_array
      type(c_ptr), value :: plan
      integer(c_int), value :: direction
      type(petacomm_transpose_array), intent(in) :: in, out
      integer(c_int) :: status
    end function c_execute_array

    function c_plan_strategy(plan, name) bind(C, name="petacomm_transpose_plan_strategy") &
        result(status)
      import :: c_int, c_ptr
      type(c_ptr), value :: plan
      type(c_ptr), intent(out) :: name
      integer(c_int) :: status
    end function c_plan_strategy

    function c_plan_stats(plan, stats) bind(C, name="petacomm_transpose_plan_stats") &
        result(status)
      import :: c_int, c_ptr, petacomm_transpose_stats
      type(c_ptr), value :: plan
      type(petacomm_transpose_stats), intent(out) :: stats
      integer(c_int) :: status
    end function c_plan_stats

    function c_pencil_create_f(comm, n, grid, howmany, dtype, opts, pencil) &
        bind(C, name="petacomm_transpose_pencil_create_f") result(status)
      import :: c_int, c_int64_t, c_ptr, petacomm_transpose_options
      integer(c_int), value :: comm
      integer(c_int64_t), intent(in) :: n(3)
      integer(c_int), intent(in) :: grid(2)
      integer(c_int64_t), value :: howmany
      integer(c_int), value :: dtype
      type(petacomm_transpose_options), intent(in) :: opts
      type(c_ptr), intent(out) :: pencil
      integer(c_int) :: status
    end function c_pencil_create_f

    function c_pencil_free(pencil) bind(C, name="petacomm_transpose_pencil_free") result(status)
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: pencil
      integer(c_int) :: status
    end function c_pencil_free

    function c_pencil_local(pencil, layout, shape, offset) &
        bind(C, name="petacomm_transpose_pencil_local") result(status)
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), value :: pencil
      integer(c_int), value :: layout
      integer(c_int64_t), intent(out) :: shape(3), offset(3)
      integer(c_int) :: status
    end function c_pencil_local

    function c_pencil_execute_array(pencil, from, to, in, out) &
        bind(C, name="petacomm_transpose_pencil_execute_array") result(status)
      import :: c_int, c_ptr, petacomm_transpose_array
      type(c_ptr), value :: pencil
      integer(c_int), value :: from, to
      type(petacomm_transpose_array), intent(in) :: in, out
      integer(c_int) :: status
    end function c_pencil_execute_array

    function c_fftfilter_create_f(comm, n, grid, modes, variant, opts, filter) &
        bind(C, name="petacomm_fftfilter_create_f") result(status)
      import :: c_int, c_int64_t, c_ptr, petacomm_transpose_options
      integer(c_int), value :: comm
      integer(c_int64_t), intent(in) :: n(3)
      integer(c_int), intent(in) :: grid(2)
      integer(c_int64_t), intent(in) :: modes(2)
      integer(c_int), value :: variant
      type(petacomm_transpose_options), intent(in) :: opts
      type(c_ptr), intent(out) :: filter
      integer(c_int) :: status
    end function c_fftfilter_create_f

    function c_fftfilter_free(filter) bind(C, name="petacomm_fftfilter_free") result(status)
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: filter
      integer(c_int) :: status
    end function c_fftfilter_free

    function c_fftfilter_local(filter, shape, offset) bind(C, name="petacomm_fftfilter_local") &
        result(status)
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), value :: filter
      integer(c_int64_t), intent(out) :: shape(3), offset(3)
      integer(c_int) :: status
    end function c_fftfilter_local

    function c_fftfilter_apply_array(filter, in, out) &
        bind(C, name="petacomm_fftfilter_apply_array") result(status)
      import :: c_int, c_ptr, petacomm_transpose_array
      type(c_ptr), value :: filter
      type(petacomm_transpose_array), intent(in) :: in, out
      integer(c_int) :: status
    end function c_fftfilter_apply_array

    function c_fftfilter_stats(filter, stats) bind(C, name="petacomm_fftfilter_stats_get") &
        result(status)
      import :: c_int, c_ptr, petacomm_fftfilter_stats
      type(c_ptr), value :: filter
      type(petacomm_fftfilter_stats), intent(out) :: stats
      integer(c_int) :: status
    end function c_fftfilter_stats

    ! The three describe functions share this signature (a JSON text into buf).
    function c_plan_describe(handle, buf, buflen, needed) &
        bind(C, name="petacomm_transpose_plan_describe") result(status)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: handle, buf
      integer(c_size_t), value :: buflen
      integer(c_size_t), intent(out) :: needed
      integer(c_int) :: status
    end function c_plan_describe

    function c_pencil_describe(handle, buf, buflen, needed) &
        bind(C, name="petacomm_transpose_pencil_describe") result(status)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: handle, buf
      integer(c_size_t), value :: buflen
      integer(c_size_t), intent(out) :: needed
      integer(c_int) :: status
    end function c_pencil_describe

    function c_fftfilter_describe(handle, buf, buflen, needed) &
        bind(C, name="petacomm_fftfilter_describe") result(status)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: handle, buf
      integer(c_size_t), value :: buflen
      integer(c_size_t), intent(out) :: needed
      integer(c_int) :: status
    end function c_fftfilter_describe
  end interface

  abstract interface
    function describe_function(handle, buf, buflen, needed) bind(C) result(status)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: handle, buf
      integer(c_size_t), value :: buflen
      integer(c_size_t), intent(out) :: needed
      integer(c_int) :: status
    end function describe_function
  end interface

contains

  !> The default options (the C defaults: strategy "auto", planner "estimate", the default
  !> costs).
  subroutine petacomm_transpose_options_default(options, status)
    type(petacomm_transpose_options), intent(out) :: options
    integer, intent(out) :: status

    status = c_options_default(options)
  end subroutine petacomm_transpose_options_default

  !> How many strategies the registry lists (local; no MPI needed).
  subroutine petacomm_transpose_strategy_count(count, status)
    integer, intent(out) :: count
    integer, intent(out) :: status
    integer(c_int) :: n

    status = c_strategy_count(n)
    count = int(n)
  end subroutine petacomm_transpose_strategy_count

  !> Strategy number index (1 .. count): its name, a one-sentence summary and the names of
  !> the options it reads (space-separated, "" if none).
  subroutine petacomm_transpose_strategy_info(index, name, summary, options, status)
    integer, intent(in) :: index
    character(len=:), allocatable, intent(out) :: name, summary, options
    integer, intent(out) :: status
    type(petacomm_strategy_info) :: info

    status = c_strategy_info(int(index - 1, c_int), info)
    if (status == PETACOMM_SUCCESS) then
      name = petacomm_f_string(info%name)
      summary = petacomm_f_string(info%summary)
      options = petacomm_f_string(info%options)
    else
      name = ""
      summary = ""
      options = ""
    end if
  end subroutine petacomm_transpose_strategy_info

  !> Builds a slab plan for the global shape(1) x shape(2) array (n0 rows distributed, n1
  !> columns) of dtype, howmany values per element (default 1), collective over comm.
  !> strategy: "auto" (default) or a registry name; planner: "estimate" (default) or
  !> "measure"; mask: n1 flags, .true. where column j of the forward input may be nonzero
  !> (filter-aware transposes); options: all other settings (default: the C defaults).
  subroutine petacomm_transpose_plan_create(comm, shape, dtype, plan, status, howmany, &
                                            strategy, planner, mask, options)
    integer, intent(in) :: comm
    integer, intent(in) :: shape(2)
    integer, intent(in) :: dtype
    type(petacomm_transpose_plan), intent(out) :: plan
    integer, intent(out) :: status
    integer, intent(in), optional :: howmany
    character(len=*), intent(in), optional :: strategy, planner
    logical, intent(in), optional :: mask(:)
    type(petacomm_transpose_options), intent(in), optional :: options
    type(petacomm_transpose_options) :: opts
    character(kind=c_char), allocatable, target :: strategy_c(:), planner_c(:)
    integer(c_signed_char), allocatable, target :: mask_c(:)
    integer(c_int64_t) :: values

    call resolve_options(opts, status, strategy_c, planner_c, strategy, planner, options)
    if (status /= PETACOMM_SUCCESS) return
    if (present(strategy)) opts%strategy = c_loc(strategy_c)
    if (present(planner)) opts%planner = c_loc(planner_c)
    if (present(mask)) then
      ! One byte per column, as the C API reads it; a zero-length mask is still an array.
      allocate (mask_c(max(size(mask), 1)))
      mask_c = 0_c_signed_char
      mask_c(1:size(mask)) = merge(1_c_signed_char, 0_c_signed_char, mask)
      opts%mask = c_loc(mask_c)
      opts%mask_length = size(mask, kind=c_int64_t)
    end if
    values = 1
    if (present(howmany)) values = howmany
    status = c_plan_create_f(int(comm, c_int), int(shape(1), c_int64_t), &
                             int(shape(2), c_int64_t), values, int(dtype, c_int), opts, &
                             plan%handle)
  end subroutine petacomm_transpose_plan_create

  !> Frees the plan (collective); freeing a freed or never created plan does nothing.
  subroutine petacomm_transpose_plan_free(plan, status)
    type(petacomm_transpose_plan), intent(inout) :: plan
    integer, intent(out) :: status

    status = c_plan_free(plan%handle)
  end subroutine petacomm_transpose_plan_free

  !> This rank's part of the layouts (local).
  subroutine petacomm_transpose_plan_local(plan, local, status)
    type(petacomm_transpose_plan), intent(in) :: plan
    type(petacomm_transpose_local), intent(out) :: local
    integer, intent(out) :: status

    status = c_plan_local(plan%handle, local)
  end subroutine petacomm_transpose_plan_local

  !> The name of the strategy the plan uses (local; "measure-pending" with planner
  !> "measure" before the first execution).
  subroutine petacomm_transpose_plan_strategy(plan, name, status)
    type(petacomm_transpose_plan), intent(in) :: plan
    character(len=:), allocatable, intent(out) :: name
    integer, intent(out) :: status
    type(c_ptr) :: text

    status = c_plan_strategy(plan%handle, text)
    if (status == PETACOMM_SUCCESS) then
      name = petacomm_f_string(text)
    else
      name = ""
    end if
  end subroutine petacomm_transpose_plan_strategy

  !> The plan's description as JSON text (local): layout, every candidate's predicted cost,
  !> the choice and the reason.
  subroutine petacomm_transpose_plan_describe(plan, text, status)
    type(petacomm_transpose_plan), intent(in) :: plan
    character(len=:), allocatable, intent(out) :: text
    integer, intent(out) :: status

    call describe_with(c_plan_describe, plan%handle, text, status)
  end subroutine petacomm_transpose_plan_describe

  !> Messages, bytes and memory per forward execution over the ranks (collective).
  subroutine petacomm_transpose_plan_stats(plan, stats, status)
    type(petacomm_transpose_plan), intent(in) :: plan
    type(petacomm_transpose_stats), intent(out) :: stats
    integer, intent(out) :: status

    status = c_plan_stats(plan%handle, stats)
  end subroutine petacomm_transpose_plan_stats

  !> Builds a pencil plan for the global shape(1) x shape(2) x shape(3) array (C's n0 x n1 x
  !> n2) on a grid(1) x grid(2) process grid (collective). strategy, planner, options: as for
  !> petacomm_transpose_plan_create (no mask).
  subroutine petacomm_transpose_pencil_create(comm, shape, grid, dtype, pencil, status, &
                                              howmany, strategy, planner, options)
    integer, intent(in) :: comm
    integer, intent(in) :: shape(3), grid(2)
    integer, intent(in) :: dtype
    type(petacomm_transpose_pencil), intent(out) :: pencil
    integer, intent(out) :: status
    integer, intent(in), optional :: howmany
    character(len=*), intent(in), optional :: strategy, planner
    type(petacomm_transpose_options), intent(in), optional :: options
    type(petacomm_transpose_options) :: opts
    character(kind=c_char), allocatable, target :: strategy_c(:), planner_c(:)
    integer(c_int64_t) :: values

    call resolve_options(opts, status, strategy_c, planner_c, strategy, planner, options)
    if (status /= PETACOMM_SUCCESS) return
    if (present(strategy)) opts%strategy = c_loc(strategy_c)
    if (present(planner)) opts%planner = c_loc(planner_c)
    values = 1
    if (present(howmany)) values = howmany
    status = c_pencil_create_f(int(comm, c_int), int(shape, c_int64_t), int(grid, c_int), &
                               values, int(dtype, c_int), opts, pencil%handle)
  end subroutine petacomm_transpose_pencil_create

  !> Frees the pencil plan (collective); freeing a freed plan does nothing.
  subroutine petacomm_transpose_pencil_free(pencil, status)
    type(petacomm_transpose_pencil), intent(inout) :: pencil
    integer, intent(out) :: status

    status = c_pencil_free(pencil%handle)
  end subroutine petacomm_transpose_pencil_free

  !> This rank's array in a layout, in Fortran order (the C storage order reversed): a
  !> Z-layout array is a(shape(1), shape(2), shape(3)) = (n2, n1 block, n0 block), and
  !> offset(k) is the global (0-based) index of its first element along axis k.
  subroutine petacomm_transpose_pencil_local(pencil, layout, shape, offset, status)
    type(petacomm_transpose_pencil), intent(in) :: pencil
    integer, intent(in) :: layout
    integer(c_int64_t), intent(out) :: shape(3), offset(3)
    integer, intent(out) :: status
    integer(c_int64_t) :: c_shape(3), c_offset(3)

    status = c_pencil_local(pencil%handle, int(layout, c_int), c_shape, c_offset)
    shape = c_shape(3:1:-1)
    offset = c_offset(3:1:-1)
  end subroutine petacomm_transpose_pencil_local

  !> The pencil plan's description as JSON text (local).
  subroutine petacomm_transpose_pencil_describe(pencil, text, status)
    type(petacomm_transpose_pencil), intent(in) :: pencil
    character(len=:), allocatable, intent(out) :: text
    integer, intent(out) :: status

    call describe_with(c_pencil_describe, pencil%handle, text, status)
  end subroutine petacomm_transpose_pencil_describe

  !> Builds a Fourier filter of the real field f(s, chi, phi) of global shape [n_s, n_chi,
  !> n_phi] (C order) on a grid(1) x grid(2) process grid over s and chi, keeping the modes
  !> |m| <= modes(1) along chi and |n| <= modes(2) along phi (collective). variant:
  !> PETACOMM_FFTFILTER_PLAIN, _PACKED or _PACKED_PARTIAL; strategy, planner, options: the
  !> transposes' settings (no mask: the variant decides).
  subroutine petacomm_fftfilter_create(comm, shape, grid, modes, variant, filter, status, &
                                       strategy, planner, options)
    integer, intent(in) :: comm
    integer, intent(in) :: shape(3), grid(2), modes(2)
    integer, intent(in) :: variant
    type(petacomm_fftfilter), intent(out) :: filter
    integer, intent(out) :: status
    character(len=*), intent(in), optional :: strategy, planner
    type(petacomm_transpose_options), intent(in), optional :: options
    type(petacomm_transpose_options) :: opts
    character(kind=c_char), allocatable, target :: strategy_c(:), planner_c(:)

    call resolve_options(opts, status, strategy_c, planner_c, strategy, planner, options)
    if (status /= PETACOMM_SUCCESS) return
    if (present(strategy)) opts%strategy = c_loc(strategy_c)
    if (present(planner)) opts%planner = c_loc(planner_c)
    status = c_fftfilter_create_f(int(comm, c_int), int(shape, c_int64_t), int(grid, c_int), &
                                  int(modes, c_int64_t), int(variant, c_int), opts, &
                                  filter%handle)
  end subroutine petacomm_fftfilter_create

  !> Frees the filter (collective); freeing a freed filter does nothing.
  subroutine petacomm_fftfilter_free(filter, status)
    type(petacomm_fftfilter), intent(inout) :: filter
    integer, intent(out) :: status

    status = c_fftfilter_free(filter%handle)
  end subroutine petacomm_fftfilter_free

  !> This rank's block in Fortran order: f(shape(1), shape(2), shape(3)) = (n_phi, chi
  !> block, s block), offset(k) the global (0-based) index of its first element along axis k.
  subroutine petacomm_fftfilter_local(filter, shape, offset, status)
    type(petacomm_fftfilter), intent(in) :: filter
    integer(c_int64_t), intent(out) :: shape(3), offset(3)
    integer, intent(out) :: status
    integer(c_int64_t) :: c_shape(3), c_offset(3)

    status = c_fftfilter_local(filter%handle, c_shape, c_offset)
    shape = c_shape(3:1:-1)
    offset = c_offset(3:1:-1)
  end subroutine petacomm_fftfilter_local

  !> Filters in into out (collective): real64 arrays of the local shape; in place with the
  !> same array as both.
  subroutine petacomm_fftfilter_apply(filter, in, out, status)
    type(petacomm_fftfilter), intent(in) :: filter
    real(c_double), intent(in), target :: in(:, :, :)
    real(c_double), intent(inout), target :: out(:, :, :)
    integer, intent(out) :: status
    type(petacomm_transpose_array), target :: in_c, out_c

    in_c = array_of(PETACOMM_TRANSPOSE_FLOAT64, shape(in), .false.)
    if (size(in) > 0) call locate(in_c, c_loc(in(1, 1, 1)), &
                                  [c_loc(in(min(2, size(in, 1)), 1, 1)), &
                                   c_loc(in(1, min(2, size(in, 2)), 1)), &
                                   c_loc(in(1, 1, min(2, size(in, 3))))])
    out_c = array_of(PETACOMM_TRANSPOSE_FLOAT64, shape(out), .true.)
    if (size(out) > 0) call locate(out_c, c_loc(out(1, 1, 1)), &
                                   [c_loc(out(min(2, size(out, 1)), 1, 1)), &
                                    c_loc(out(1, min(2, size(out, 2)), 1)), &
                                    c_loc(out(1, 1, min(2, size(out, 3))))])
    status = c_fftfilter_apply_array(filter%handle, in_c, out_c)
  end subroutine petacomm_fftfilter_apply

  !> This rank's totals over all applications so far (local).
  subroutine petacomm_fftfilter_stats_get(filter, stats, status)
    type(petacomm_fftfilter), intent(in) :: filter
    type(petacomm_fftfilter_stats), intent(out) :: stats
    integer, intent(out) :: status

    status = c_fftfilter_stats(filter%handle, stats)
  end subroutine petacomm_fftfilter_stats_get

  !> The filter's description as JSON text (local).
  subroutine petacomm_fftfilter_describe(filter, text, status)
    type(petacomm_fftfilter), intent(in) :: filter
    character(len=:), allocatable, intent(out) :: text
    integer, intent(out) :: status

    call describe_with(c_fftfilter_describe, filter%handle, text, status)
  end subroutine petacomm_fftfilter_describe

  ! ---- shared by the routines above ----

  ! The options a create routine passes: the caller's or the defaults, and C copies of the
  ! strategy and planner names (the caller points the options at them: c_loc needs the
  ! arrays to live in the caller).
  subroutine resolve_options(opts, status, strategy_c, planner_c, strategy, planner, options)
    type(petacomm_transpose_options), intent(out) :: opts
    integer, intent(out) :: status
    character(kind=c_char), allocatable, intent(out) :: strategy_c(:), planner_c(:)
    character(len=*), intent(in), optional :: strategy, planner
    type(petacomm_transpose_options), intent(in), optional :: options

    status = PETACOMM_SUCCESS
    if (present(options)) then
      opts = options
    else
      status = c_options_default(opts)
    end if
    if (present(strategy)) strategy_c = petacomm_c_string(strategy)
    if (present(planner)) planner_c = petacomm_c_string(planner)
  end subroutine resolve_options

  ! A describe function's JSON text: asks for the length, then fills a buffer that size.
  subroutine describe_with(describe, handle, text, status)
    procedure(describe_function) :: describe
    type(c_ptr), intent(in) :: handle
    character(len=:), allocatable, intent(out) :: text
    integer, intent(out) :: status
    character(kind=c_char), allocatable, target :: buffer(:)
    integer(c_size_t) :: capacity, needed
    integer :: i

    status = describe(handle, c_null_ptr, 0_c_size_t, capacity)
    if (status == PETACOMM_SUCCESS) then
      allocate (buffer(capacity))
      status = describe(handle, c_loc(buffer), capacity, needed)
    end if
    if (status /= PETACOMM_SUCCESS) then
      text = ""
      return
    end if
    allocate (character(len=size(buffer) - 1) :: text)
    do i = 1, len(text)
      text(i:i) = buffer(i)
    end do
  end subroutine describe_with

  ! The C descriptor of a Fortran array of the given extents, without its address yet: the
  ! axes reversed (a(columns, rows) is C's (rows, columns)).
  function array_of(dtype, extents, writeable) result(array)
    integer(c_int), intent(in) :: dtype
    integer, intent(in) :: extents(:)
    logical, intent(in) :: writeable
    type(petacomm_transpose_array) :: array
    integer :: axis, rank

    rank = size(extents)
    array%data = c_null_ptr
    array%ndim = int(rank, c_int)
    array%shape = 0
    array%strides = 0
    do axis = 1, rank
      array%shape(rank + 1 - axis) = extents(axis)
    end do
    array%dtype = dtype
    array%writeable = merge(1_c_int, 0_c_int, writeable)
  end function array_of

  ! Its address and strides, measured between the first element and the next one along each
  ! axis: sections and pointer views are described as they are, and the C checks refuse
  ! what is not contiguous (nothing is copied behind the caller's back).
  subroutine locate(array, first, next)
    type(petacomm_transpose_array), intent(inout) :: array
    type(c_ptr), intent(in) :: first
    type(c_ptr), intent(in) :: next(:)
    integer :: axis, rank

    rank = size(next)
    array%data = first
    do axis = 1, rank
      array%strides(rank + 1 - axis) = transfer(next(axis), 0_c_intptr_t) - &
                                       transfer(first, 0_c_intptr_t)
    end do
  end subroutine locate

  ! ---- the kind- and rank-specific procedures of the generic interfaces ----
  subroutine execute_real32_2d(plan, direction, in, out, status)
    type(petacomm_transpose_plan), intent(in) :: plan
    integer, intent(in) :: direction
    real(c_float), intent(in), target :: in(:, :)
    real(c_float), intent(inout), target :: out(:, :)
    integer, intent(out) :: status
    type(petacomm_transpose_array), target :: in_c, out_c

    in_c = array_of(PETACOMM_TRANSPOSE_FLOAT32, shape(in), .false.)
    if (size(in) > 0) call locate(in_c, c_loc(in(1, 1)), &
                                  [c_loc(in(min(2, size(in, 1)), 1)), &
                                   c_loc(in(1, min(2, size(in, 2))))])
    out_c = array_of(PETACOMM_TRANSPOSE_FLOAT32, shape(out), .true.)
    if (size(out) > 0) call locate(out_c, c_loc(out(1, 1)), &
                                  [c_loc(out(min(2, size(out, 1)), 1)), &
                                   c_loc(out(1, min(2, size(out, 2))))])
    status = c_execute_array(plan%handle, int(direction, c_int), in_c, out_c)
  end subroutine execute_real32_2d

  subroutine execute_real32_3d(plan, direction, in, out, status)
    type(petacomm_transpose_plan), intent(in) :: plan
    integer, intent(in) :: direction
    real(c_float), intent(in), target :: in(:, :, :)
    real(c_float), intent(inout), target :: out(:, :, :)
    integer, intent(out) :: status
    type(petacomm_transpose_array), target :: in_c, out_c

    in_c = array_of(PETACOMM_TRANSPOSE_FLOAT32, shape(in), .false.)
    if (size(in) > 0) call locate(in_c, c_loc(in(1, 1, 1)), &
                                  [c_loc(in(min(2, size(in, 1)), 1, 1)), &
                                   c_loc(in(1, min(2, size(in, 2)), 1)), &
                                   c_loc(in(1, 1, min(2, size(in, 3))))])
    out_c = array_of(PETACOMM_TRANSPOSE_FLOAT32, shape(out), .true.)
    if (size(out) > 0) call locate(out_c, c_loc(out(1, 1, 1)), &
                                  [c_loc(out(min(2, size(out, 1)), 1, 1)), &
                                   c_loc(out(1, min(2, size(out, 2)), 1)), &
                                   c_loc(out(1, 1, min(2, size(out, 3))))])
    status = c_execute_array(plan%handle, int(direction, c_int), in_c, out_c)
  end subroutine execute_real32_3d

  subroutine execute_real64_2d(plan, direction, in, out, status)
    type(petacomm_transpose_plan), intent(in) :: plan
    integer, intent(in) :: direction
    real(c_double), intent(in), target :: in(:, :)
    real(c_double), intent(inout), target :: out(:, :)
    integer, intent(out) :: status
    type(petacomm_transpose_array), target :: in_c, out_c

    in_c = array_of(PETACOMM_TRANSPOSE_FLOAT64, shape(in), .false.)
    if (size(in) > 0) call locate(in_c, c_loc(in(1, 1)), &
                                  [c_loc(in(min(2, size(in, 1)), 1)), &
                                   c_loc(in(1, min(2, size(in, 2))))])
    out_c = array_of(PETACOMM_TRANSPOSE_FLOAT64, shape(out), .true.)
    if (size(out) > 0) call locate(out_c, c_loc(out(1, 1)), &
                                  [c_loc(out(min(2, size(out, 1)), 1)), &
                                   c_loc(out(1, min(2, size(out, 2))))])
    status = c_execute_array(plan%handle, int(direction, c_int), in_c, out_c)
  end subroutine execute_real64_2d

  subroutine execute_real64_3d(plan, direction, in, out, status)
    type(petacomm_transpose_plan), intent(in) :: plan
    integer, intent(in) :: direction
    real(c_double), intent(in), target :: in(:, :, :)
    real(c_double), intent(inout), target :: out(:, :, :)
    integer, intent(out) :: status
    type(petacomm_transpose_array), target :: in_c, out_c

    in_c = array_of(PETACOMM_TRANSPOSE_FLOAT64, shape(in), .false.)
    if (size(in) > 0) call locate(in_c, c_loc(in(1, 1, 1)), &
                                  [c_loc(in(min(2, size(in, 1)), 1, 1)), &
                                   c_loc(in(1, min(2, size(in, 2)), 1)), &
                                   c_loc(in(1, 1, min(2, size(in, 3))))])
    out_c = array_of(PETACOMM_TRANSPOSE_FLOAT64, shape(out), .true.)
    if (size(out) > 0) call locate(out_c, c_loc(out(1, 1, 1)), &
                                  [c_loc(out(min(2, size(out, 1)), 1, 1)), &
                                   c_loc(out(1, min(2, size(out, 2)), 1)), &
                                   c_loc(out(1, 1, min(2, size(out, 3))))])
    status = c_execute_array(plan%handle, int(direction, c_int), in_c, out_c)
  end subroutine execute_real64_3d

  subroutine execute_complex64_2d(plan, direction, in, out, status)
    type(petacomm_transpose_plan), intent(in) :: plan
    integer, intent(in) :: direction
    complex(c_float_complex), intent(in), target :: in(:, :)
    complex(c_float_complex), intent(inout), target :: out(:, :)
    integer, intent(out) :: status
    type(petacomm_transpose_array), target :: in_c, out_c

    in_c = array_of(PETACOMM_TRANSPOSE_COMPLEX64, shape(in), .false.)
    if (size(in) > 0) call locate(in_c, c_loc(in(1, 1)), &
                                  [c_loc(in(min(2, size(in, 1)), 1)), &
                                   c_loc(in(1, min(2, size(in, 2))))])
    out_c = array_of(PETACOMM_TRANSPOSE_COMPLEX64, shape(out), .true.)
    if (size(out) > 0) call locate(out_c, c_loc(out(1, 1)), &
                                  [c_loc(out(min(2, size(out, 1)), 1)), &
                                   c_loc(out(1, min(2, size(out, 2))))])
    status = c_execute_array(plan%handle, int(direction, c_int), in_c, out_c)
  end subroutine execute_complex64_2d

  subroutine execute_complex64_3d(plan, direction, in, out, status)
    type(petacomm_transpose_plan), intent(in) :: plan
    integer, intent(in) :: direction
    complex(c_float_complex), intent(in), target :: in(:, :, :)
    complex(c_float_complex), intent(inout), target :: out(:, :, :)
    integer, intent(out) :: status
    type(petacomm_transpose_array), target :: in_c, out_c

    in_c = array_of(PETACOMM_TRANSPOSE_COMPLEX64, shape(in), .false.)
    if (size(in) > 0) call locate(in_c, c_loc(in(1, 1, 1)), &
                                  [c_loc(in(min(2, size(in, 1)), 1, 1)), &
                                   c_loc(in(1, min(2, size(in, 2)), 1)), &
                                   c_loc(in(1, 1, min(2, size(in, 3))))])
    out_c = array_of(PETACOMM_TRANSPOSE_COMPLEX64, shape(out), .true.)
    if (size(out) > 0) call locate(out_c, c_loc(out(1, 1, 1)), &
                                  [c_loc(out(min(2, size(out, 1)), 1, 1)), &
                                   c_loc(out(1, min(2, size(out, 2)), 1)), &
                                   c_loc(out(1, 1, min(2, size(out, 3))))])
    status = c_execute_array(plan%handle, int(direction, c_int), in_c, out_c)
  end subroutine execute_complex64_3d

  subroutine execute_complex128_2d(plan, direction, in, out, status)
    type(petacomm_transpose_plan), intent(in) :: plan
    integer, intent(in) :: direction
    complex(c_double_complex), intent(in), target :: in(:, :)
    complex(c_double_complex), intent(inout), target :: out(:, :)
    integer, intent(out) :: status
    type(petacomm_transpose_array), target :: in_c, out_c

    in_c = array_of(PETACOMM_TRANSPOSE_COMPLEX128, shape(in), .false.)
    if (size(in) > 0) call locate(in_c, c_loc(in(1, 1)), &
                                  [c_loc(in(min(2, size(in, 1)), 1)), &
                                   c_loc(in(1, min(2, size(in, 2))))])
    out_c = array_of(PETACOMM_TRANSPOSE_COMPLEX128, shape(out), .true.)
    if (size(out) > 0) call locate(out_c, c_loc(out(1, 1)), &
                                  [c_loc(out(min(2, size(out, 1)), 1)), &
                                   c_loc(out(1, min(2, size(out, 2))))])
    status = c_execute_array(plan%handle, int(direction, c_int), in_c, out_c)
  end subroutine execute_complex128_2d

  subroutine execute_complex128_3d(plan, direction, in, out, status)
    type(petacomm_transpose_plan), intent(in) :: plan
    integer, intent(in) :: direction
    complex(c_double_complex), intent(in), target :: in(:, :, :)
    complex(c_double_complex), intent(inout), target :: out(:, :, :)
    integer, intent(out) :: status
    type(petacomm_transpose_array), target :: in_c, out_c

    in_c = array_of(PETACOMM_TRANSPOSE_COMPLEX128, shape(in), .false.)
    if (size(in) > 0) call locate(in_c, c_loc(in(1, 1, 1)), &
                                  [c_loc(in(min(2, size(in, 1)), 1, 1)), &
                                   c_loc(in(1, min(2, size(in, 2)), 1)), &
                                   c_loc(in(1, 1, min(2, size(in, 3))))])
    out_c = array_of(PETACOMM_TRANSPOSE_COMPLEX128, shape(out), .true.)
    if (size(out) > 0) call locate(out_c, c_loc(out(1, 1, 1)), &
                                  [c_loc(out(min(2, size(out, 1)), 1, 1)), &
                                   c_loc(out(1, min(2, size(out, 2)), 1)), &
                                   c_loc(out(1, 1, min(2, size(out, 3))))])
    status = c_execute_array(plan%handle, int(direction, c_int), in_c, out_c)
  end subroutine execute_complex128_3d

  subroutine pencil_execute_real32_3d(pencil, from, to, in, out, status)
    type(petacomm_transpose_pencil), intent(in) :: pencil
    integer, intent(in) :: from, to
    real(c_float), intent(in), target :: in(:, :, :)
    real(c_float), intent(inout), target :: out(:, :, :)
    integer, intent(out) :: status
    type(petacomm_transpose_array), target :: in_c, out_c

    in_c = array_of(PETACOMM_TRANSPOSE_FLOAT32, shape(in), .false.)
    if (size(in) > 0) call locate(in_c, c_loc(in(1, 1, 1)), &
                                  [c_loc(in(min(2, size(in, 1)), 1, 1)), &
                                   c_loc(in(1, min(2, size(in, 2)), 1)), &
                                   c_loc(in(1, 1, min(2, size(in, 3))))])
    out_c = array_of(PETACOMM_TRANSPOSE_FLOAT32, shape(out), .true.)
    if (size(out) > 0) call locate(out_c, c_loc(out(1, 1, 1)), &
                                  [c_loc(out(min(2, size(out, 1)), 1, 1)), &
                                   c_loc(out(1, min(2, size(out, 2)), 1)), &
                                   c_loc(out(1, 1, min(2, size(out, 3))))])
    status = c_pencil_execute_array(pencil%handle, int(from, c_int), int(to, c_int), in_c, &
                                    out_c)
  end subroutine pencil_execute_real32_3d

  subroutine pencil_execute_real32_4d(pencil, from, to, in, out, status)
    type(petacomm_transpose_pencil), intent(in) :: pencil
    integer, intent(in) :: from, to
    real(c_float), intent(in), target :: in(:, :, :, :)
    real(c_float), intent(inout), target :: out(:, :, :, :)
    integer, intent(out) :: status
    type(petacomm_transpose_array), target :: in_c, out_c

    in_c = array_of(PETACOMM_TRANSPOSE_FLOAT32, shape(in), .false.)
    if (size(in) > 0) call locate(in_c, c_loc(in(1, 1, 1, 1)), &
                                  [c_loc(in(min(2, size(in, 1)), 1, 1, 1)), &
                                   c_loc(in(1, min(2, size(in, 2)), 1, 1)), &
                                   c_loc(in(1, 1, min(2, size(in, 3)), 1)), &
                                   c_loc(in(1, 1, 1, min(2, size(in, 4))))])
    out_c = array_of(PETACOMM_TRANSPOSE_FLOAT32, shape(out), .true.)
    if (size(out) > 0) call locate(out_c, c_loc(out(1, 1, 1, 1)), &
                                  [c_loc(out(min(2, size(out, 1)), 1, 1, 1)), &
                                   c_loc(out(1, min(2, size(out, 2)), 1, 1)), &
                                   c_loc(out(1, 1, min(2, size(out, 3)), 1)), &
                                   c_loc(out(1, 1, 1, min(2, size(out, 4))))])
    status = c_pencil_execute_array(pencil%handle, int(from, c_int), int(to, c_int), in_c, &
                                    out_c)
  end subroutine pencil_execute_real32_4d

  subroutine pencil_execute_real64_3d(pencil, from, to, in, out, status)
    type(petacomm_transpose_pencil), intent(in) :: pencil
    integer, intent(in) :: from, to
    real(c_double), intent(in), target :: in(:, :, :)
    real(c_double), intent(inout), target :: out(:, :, :)
    integer, intent(out) :: status
    type(petacomm_transpose_array), target :: in_c, out_c

    in_c = array_of(PETACOMM_TRANSPOSE_FLOAT64, shape(in), .false.)
    if (size(in) > 0) call locate(in_c, c_loc(in(1, 1, 1)), &
                                  [c_loc(in(min(2, size(in, 1)), 1, 1)), &
                                   c_loc(in(1, min(2, size(in, 2)), 1)), &
                                   c_loc(in(1, 1, min(2, size(in, 3))))])
    out_c = array_of(PETACOMM_TRANSPOSE_FLOAT64, shape(out), .true.)
    if (size(out) > 0) call locate(out_c, c_loc(out(1, 1, 1)), &
                                  [c_loc(out(min(2, size(out, 1)), 1, 1)), &
                                   c_loc(out(1, min(2, size(out, 2)), 1)), &
                                   c_loc(out(1, 1, min(2, size(out, 3))))])
    status = c_pencil_execute_array(pencil%handle, int(from, c_int), int(to, c_int), in_c, &
                                    out_c)
  end subroutine pencil_execute_real64_3d

  subroutine pencil_execute_real64_4d(pencil, from, to, in, out, status)
    type(petacomm_transpose_pencil), intent(in) :: pencil
    integer, intent(in) :: from, to
    real(c_double), intent(in), target :: in(:, :, :, :)
    real(c_double), intent(inout), target :: out(:, :, :, :)
    integer, intent(out) :: status
    type(petacomm_transpose_array), target :: in_c, out_c

    in_c = array_of(PETACOMM_TRANSPOSE_FLOAT64, shape(in), .false.)
    if (size(in) > 0) call locate(in_c, c_loc(in(1, 1, 1, 1)), &
                                  [c_loc(in(min(2, size(in, 1)), 1, 1, 1)), &
                                   c_loc(in(1, min(2, size(in, 2)), 1, 1)), &
                                   c_loc(in(1, 1, min(2, size(in, 3)), 1)), &
                                   c_loc(in(1, 1, 1, min(2, size(in, 4))))])
    out_c = array_of(PETACOMM_TRANSPOSE_FLOAT64, shape(out), .true.)
    if (size(out) > 0) call locate(out_c, c_loc(out(1, 1, 1, 1)), &
                                  [c_loc(out(min(2, size(out, 1)), 1, 1, 1)), &
                                   c_loc(out(1, min(2, size(out, 2)), 1, 1)), &
                                   c_loc(out(1, 1, min(2, size(out, 3)), 1)), &
                                   c_loc(out(1, 1, 1, min(2, size(out, 4))))])
    status = c_pencil_execute_array(pencil%handle, int(from, c_int), int(to, c_int), in_c, &
                                    out_c)
  end subroutine pencil_execute_real64_4d

  subroutine pencil_execute_complex64_3d(pencil, from, to, in, out, status)
    type(petacomm_transpose_pencil), intent(in) :: pencil
    integer, intent(in) :: from, to
    complex(c_float_complex), intent(in), target :: in(:, :, :)
    complex(c_float_complex), intent(inout), target :: out(:, :, :)
    integer, intent(out) :: status
    type(petacomm_transpose_array), target :: in_c, out_c

    in_c = array_of(PETACOMM_TRANSPOSE_COMPLEX64, shape(in), .false.)
    if (size(in) > 0) call locate(in_c, c_loc(in(1, 1, 1)), &
                                  [c_loc(in(min(2, size(in, 1)), 1, 1)), &
                                   c_loc(in(1, min(2, size(in, 2)), 1)), &
                                   c_loc(in(1, 1, min(2, size(in, 3))))])
    out_c = array_of(PETACOMM_TRANSPOSE_COMPLEX64, shape(out), .true.)
    if (size(out) > 0) call locate(out_c, c_loc(out(1, 1, 1)), &
                                  [c_loc(out(min(2, size(out, 1)), 1, 1)), &
                                   c_loc(out(1, min(2, size(out, 2)), 1)), &
                                   c_loc(out(1, 1, min(2, size(out, 3))))])
    status = c_pencil_execute_array(pencil%handle, int(from, c_int), int(to, c_int), in_c, &
                                    out_c)
  end subroutine pencil_execute_complex64_3d

  subroutine pencil_execute_complex64_4d(pencil, from, to, in, out, status)
    type(petacomm_transpose_pencil), intent(in) :: pencil
    integer, intent(in) :: from, to
    complex(c_float_complex), intent(in), target :: in(:, :, :, :)
    complex(c_float_complex), intent(inout), target :: out(:, :, :, :)
    integer, intent(out) :: status
    type(petacomm_transpose_array), target :: in_c, out_c

    in_c = array_of(PETACOMM_TRANSPOSE_COMPLEX64, shape(in), .false.)
    if (size(in) > 0) call locate(in_c, c_loc(in(1, 1, 1, 1)), &
                                  [c_loc(in(min(2, size(in, 1)), 1, 1, 1)), &
                                   c_loc(in(1, min(2, size(in, 2)), 1, 1)), &
                                   c_loc(in(1, 1, min(2, size(in, 3)), 1)), &
                                   c_loc(in(1, 1, 1, min(2, size(in, 4))))])
    out_c = array_of(PETACOMM_TRANSPOSE_COMPLEX64, shape(out), .true.)
    if (size(out) > 0) call locate(out_c, c_loc(out(1, 1, 1, 1)), &
                                  [c_loc(out(min(2, size(out, 1)), 1, 1, 1)), &
                                   c_loc(out(1, min(2, size(out, 2)), 1, 1)), &
                                   c_loc(out(1, 1, min(2, size(out, 3)), 1)), &
                                   c_loc(out(1, 1, 1, min(2, size(out, 4))))])
    status = c_pencil_execute_array(pencil%handle, int(from, c_int), int(to, c_int), in_c, &
                                    out_c)
  end subroutine pencil_execute_complex64_4d

  subroutine pencil_execute_complex128_3d(pencil, from, to, in, out, status)
    type(petacomm_transpose_pencil), intent(in) :: pencil
    integer, intent(in) :: from, to
    complex(c_double_complex), intent(in), target :: in(:, :, :)
    complex(c_double_complex), intent(inout), target :: out(:, :, :)
    integer, intent(out) :: status
    type(petacomm_transpose_array), target :: in_c, out_c

    in_c = array_of(PETACOMM_TRANSPOSE_COMPLEX128, shape(in), .false.)
    if (size(in) > 0) call locate(in_c, c_loc(in(1, 1, 1)), &
                                  [c_loc(in(min(2, size(in, 1)), 1, 1)), &
                                   c_loc(in(1, min(2, size(in, 2)), 1)), &
                                   c_loc(in(1, 1, min(2, size(in, 3))))])
    out_c = array_of(PETACOMM_TRANSPOSE_COMPLEX128, shape(out), .true.)
    if (size(out) > 0) call locate(out_c, c_loc(out(1, 1, 1)), &
                                  [c_loc(out(min(2, size(out, 1)), 1, 1)), &
                                   c_loc(out(1, min(2, size(out, 2)), 1)), &
                                   c_loc(out(1, 1, min(2, size(out, 3))))])
    status = c_pencil_execute_array(pencil%handle, int(from, c_int), int(to, c_int), in_c, &
                                    out_c)
  end subroutine pencil_execute_complex128_3d

  subroutine pencil_execute_complex128_4d(pencil, from, to, in, out, status)
    type(petacomm_transpose_pencil), intent(in) :: pencil
    integer, intent(in) :: from, to
    complex(c_double_complex), intent(in), target :: in(:, :, :, :)
    complex(c_double_complex), intent(inout), target :: out(:, :, :, :)
    integer, intent(out) :: status
    type(petacomm_transpose_array), target :: in_c, out_c

    in_c = array_of(PETACOMM_TRANSPOSE_COMPLEX128, shape(in), .false.)
    if (size(in) > 0) call locate(in_c, c_loc(in(1, 1, 1, 1)), &
                                  [c_loc(in(min(2, size(in, 1)), 1, 1, 1)), &
                                   c_loc(in(1, min(2, size(in, 2)), 1, 1)), &
                                   c_loc(in(1, 1, min(2, size(in, 3)), 1)), &
                                   c_loc(in(1, 1, 1, min(2, size(in, 4))))])
    out_c = array_of(PETACOMM_TRANSPOSE_COMPLEX128, shape(out), .true.)
    if (size(out) > 0) call locate(out_c, c_loc(out(1, 1, 1, 1)), &
                                  [c_loc(out(min(2, size(out, 1)), 1, 1, 1)), &
                                   c_loc(out(1, min(2, size(out, 2)), 1, 1)), &
                                   c_loc(out(1, 1, min(2, size(out, 3)), 1)), &
                                   c_loc(out(1, 1, 1, min(2, size(out, 4))))])
    status = c_pencil_execute_array(pencil%handle, int(from, c_int), int(to, c_int), in_c, &
                                    out_c)
  end subroutine pencil_execute_complex128_4d


end module petacomm_transpose
