! petacomm for Fortran, the sparse key/value reduction (xchg.h). Programs `use petacomm`.
!
!   use mpi
!   use petacomm
!   type(petacomm_xchg_plan) :: plan
!   integer(int64) :: pixels(4)             ! this rank's keys, in [0, 2**63)
!   real(real64) :: iqu(3, 4)               ! 3 components per key: iqu(c, i)
!   call petacomm_xchg_plan_create(MPI_COMM_WORLD, pixels, plan, status)      ! collective
!   call petacomm_xchg_execute(plan, iqu, PETACOMM_XCHG_SUM, status)          ! collective
!   call petacomm_xchg_plan_free(plan, status)                                ! collective
!
! Communicators are Fortran handles: an INTEGER from `use mpi` (or mpif.h), or comm%MPI_VAL
! from `use mpi_f08`. Values are arrays of one position per key (n) or of k components per
! key (k, n); real64, real32, int32, int64 and both complex kinds. Every routine sets status
! to PETACOMM_SUCCESS or an error code; petacomm_last_error() then names the argument and
! the value at fault, and nothing was modified. Collective calls fail on all ranks together.
module petacomm_xchg
  use, intrinsic :: iso_c_binding, only: c_char, c_double, c_double_complex, c_float, &
                                         c_float_complex, c_int, c_int32_t, c_int64_t, c_loc, &
                                         c_null_ptr, c_ptr, c_size_t
  use petacomm_core, only: PETACOMM_SUCCESS, petacomm_c_string, petacomm_f_string
  implicit none
  private

  ! petacomm_xchg_dtype: the element type (options%plan_dtype; execute infers it).
  integer(c_int), parameter, public :: PETACOMM_XCHG_FLOAT32 = 0
  integer(c_int), parameter, public :: PETACOMM_XCHG_FLOAT64 = 1
  integer(c_int), parameter, public :: PETACOMM_XCHG_INT32 = 2
  integer(c_int), parameter, public :: PETACOMM_XCHG_INT64 = 3
  integer(c_int), parameter, public :: PETACOMM_XCHG_COMPLEX64 = 4
  integer(c_int), parameter, public :: PETACOMM_XCHG_COMPLEX128 = 5

  ! petacomm_xchg_op: integer sum and product wrap; complex values allow sum and prod.
  integer(c_int), parameter, public :: PETACOMM_XCHG_SUM = 0
  integer(c_int), parameter, public :: PETACOMM_XCHG_PROD = 1
  integer(c_int), parameter, public :: PETACOMM_XCHG_MIN = 2
  integer(c_int), parameter, public :: PETACOMM_XCHG_MAX = 3

  !> The planner's cost parameters (petacomm_xchg_cost_params): seconds, seconds per byte.
  type, bind(C), public :: petacomm_xchg_cost_params
    real(c_double) :: p2p_alpha, p2p_beta
    real(c_double) :: allreduce_alpha, allreduce_beta
    real(c_double) :: allgather_alpha, allgather_beta
    real(c_double) :: alltoallv_alpha, alltoallv_beta
    real(c_double) :: local_beta
  end type petacomm_xchg_cost_params

  !> Plan options (petacomm_xchg_options), filled by petacomm_xchg_options_default. Strategy
  !> and transport are C strings: give them by name to petacomm_xchg_plan_create instead.
  type, bind(C), public :: petacomm_xchg_options
    type(c_ptr) :: strategy
    type(c_ptr) :: transport
    integer(c_int64_t) :: chunk_keys
    integer(c_int64_t) :: allgather_keys
    integer(c_int) :: hub_threshold
    integer(c_int) :: deterministic
    integer(c_int) :: autotune
    integer(c_int) :: send_window
    integer(c_int) :: plan_dtype
    integer(c_int) :: plan_k
    type(petacomm_xchg_cost_params) :: cost
  end type petacomm_xchg_options

  !> A plan: the C handle and the communicator it was created on.
  type, public :: petacomm_xchg_plan
    private
    type(c_ptr) :: handle = c_null_ptr
    integer(c_int) :: comm = 0
  end type petacomm_xchg_plan

  public :: petacomm_xchg_options_default, petacomm_xchg_plan_create, petacomm_xchg_plan_free
  public :: petacomm_xchg_execute, petacomm_xchg_plan_strategy, petacomm_xchg_plan_describe

  !> Reduces values in place (collective): (n) or (k, n) arrays of any supported kind.
  interface petacomm_xchg_execute
    module procedure execute_real64, execute_real64_k, execute_real32, execute_real32_k, &
                     execute_int32, execute_int32_k, execute_int64, execute_int64_k, &
                     execute_complex64, execute_complex64_k, execute_complex128, execute_complex128_k
  end interface petacomm_xchg_execute

  interface
    function c_options_default(opts) bind(C, name="petacomm_xchg_options_default") result(status)
      import :: c_int, petacomm_xchg_options
      type(petacomm_xchg_options), intent(out) :: opts
      integer(c_int) :: status
    end function c_options_default

    function c_plan_create_f(comm, keys, n, opts, plan) &
        bind(C, name="petacomm_xchg_plan_create_f") result(status)
      import :: c_int, c_int64_t, c_ptr, petacomm_xchg_options
      integer(c_int), value :: comm
      type(c_ptr), value :: keys
      integer(c_int64_t), value :: n
      type(petacomm_xchg_options), intent(in) :: opts
      type(c_ptr), intent(out) :: plan
      integer(c_int) :: status
    end function c_plan_create_f

    function c_plan_free(plan) bind(C, name="petacomm_xchg_plan_free") result(status)
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: plan
      integer(c_int) :: status
    end function c_plan_free

    function c_execute_begin_f(plan, comm, values, n, k, dtype, op) &
        bind(C, name="petacomm_xchg_execute_begin_f") result(status)
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), value :: plan
      integer(c_int), value :: comm
      type(c_ptr), value :: values
      integer(c_int64_t), value :: n
      integer(c_int), value :: k, dtype, op
      integer(c_int) :: status
    end function c_execute_begin_f

    function c_execute_end(plan) bind(C, name="petacomm_xchg_execute_end") result(status)
      import :: c_int, c_ptr
      type(c_ptr), value :: plan
      integer(c_int) :: status
    end function c_execute_end

    function c_plan_strategy(plan, name) bind(C, name="petacomm_xchg_plan_strategy") &
        result(status)
      import :: c_int, c_ptr
      type(c_ptr), value :: plan
      type(c_ptr), intent(out) :: name
      integer(c_int) :: status
    end function c_plan_strategy

    function c_plan_describe(plan, buf, buflen, needed) &
        bind(C, name="petacomm_xchg_plan_describe") result(status)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: plan
      type(c_ptr), value :: buf
      integer(c_size_t), value :: buflen
      integer(c_size_t), intent(out) :: needed
      integer(c_int) :: status
    end function c_plan_describe
  end interface

contains

  !> The default options (the C defaults: strategy "auto", the commodity-cluster costs).
  subroutine petacomm_xchg_options_default(options, status)
    type(petacomm_xchg_options), intent(out) :: options
    integer, intent(out) :: status

    status = c_options_default(options)
  end subroutine petacomm_xchg_options_default

  !> Builds a plan from this rank's keys (collective over comm). strategy: "auto" (default),
  !> "dense-allreduce", "allgather", "directory", "owner" or "hub-split"; transport: "p2p",
  !> "neighbor" or "alltoallv"; options: all other settings (default: the C defaults).
  subroutine petacomm_xchg_plan_create(comm, keys, plan, status, strategy, transport, options)
    integer, intent(in) :: comm
    integer(c_int64_t), intent(in), target, contiguous :: keys(:)
    type(petacomm_xchg_plan), intent(out) :: plan
    integer, intent(out) :: status
    character(len=*), intent(in), optional :: strategy, transport
    type(petacomm_xchg_options), intent(in), optional :: options
    type(petacomm_xchg_options) :: opts
    character(kind=c_char), allocatable, target :: strategy_c(:), transport_c(:)
    type(c_ptr) :: keys_address, handle

    if (present(options)) then
      opts = options
    else
      status = c_options_default(opts)
      if (status /= PETACOMM_SUCCESS) return
    end if
    if (present(strategy)) then
      strategy_c = petacomm_c_string(strategy)
      opts%strategy = c_loc(strategy_c)
    end if
    if (present(transport)) then
      transport_c = petacomm_c_string(transport)
      opts%transport = c_loc(transport_c)
    end if
    keys_address = c_null_ptr
    if (size(keys) > 0) keys_address = c_loc(keys)
    status = c_plan_create_f(int(comm, c_int), keys_address, size(keys, kind=c_int64_t), opts, &
                             handle)
    if (status == PETACOMM_SUCCESS) then
      plan%handle = handle
      plan%comm = int(comm, c_int)
    end if
  end subroutine petacomm_xchg_plan_create

  !> Frees the plan (collective); freeing a freed or never created plan does nothing.
  subroutine petacomm_xchg_plan_free(plan, status)
    type(petacomm_xchg_plan), intent(inout) :: plan
    integer, intent(out) :: status

    status = c_plan_free(plan%handle)
  end subroutine petacomm_xchg_plan_free

  !> The name of the strategy the plan uses (local).
  subroutine petacomm_xchg_plan_strategy(plan, name, status)
    type(petacomm_xchg_plan), intent(in) :: plan
    character(len=:), allocatable, intent(out) :: name
    integer, intent(out) :: status
    type(c_ptr) :: text

    status = c_plan_strategy(plan%handle, text)
    if (status == PETACOMM_SUCCESS) then
      name = petacomm_f_string(text)
    else
      name = ""
    end if
  end subroutine petacomm_xchg_plan_strategy

  !> The plan's description as JSON text (local): statistics, predicted cost per strategy,
  !> the choice and the reason.
  subroutine petacomm_xchg_plan_describe(plan, text, status)
    type(petacomm_xchg_plan), intent(in) :: plan
    character(len=:), allocatable, intent(out) :: text
    integer, intent(out) :: status
    character(kind=c_char), allocatable, target :: buffer(:)
    integer(c_size_t) :: capacity, needed
    integer :: i

    status = c_plan_describe(plan%handle, c_null_ptr, 0_c_size_t, capacity)
    if (status == PETACOMM_SUCCESS) then
      allocate (buffer(capacity))
      status = c_plan_describe(plan%handle, c_loc(buffer), capacity, needed)
    end if
    if (status /= PETACOMM_SUCCESS) then
      text = ""
      return
    end if
    allocate (character(len=size(buffer) - 1) :: text)
    do i = 1, len(text)
      text(i:i) = buffer(i)
    end do
  end subroutine petacomm_xchg_plan_describe

  ! One execution: begin (checks, starts the communication) then end (writes the results).
  function execute_at(plan, values, n, k, dtype, op) result(status)
    type(petacomm_xchg_plan), intent(in) :: plan
    type(c_ptr), intent(in) :: values
    integer(c_int64_t), intent(in) :: n
    integer(c_int), intent(in) :: k, dtype
    integer, intent(in) :: op
    integer :: status

    status = c_execute_begin_f(plan%handle, plan%comm, values, n, k, dtype, int(op, c_int))
    if (status == PETACOMM_SUCCESS) status = c_execute_end(plan%handle)
  end function execute_at

  subroutine execute_real64(plan, values, op, status)
    type(petacomm_xchg_plan), intent(in) :: plan
    real(c_double), intent(inout), target, contiguous :: values(:)
    integer, intent(in) :: op
    integer, intent(out) :: status
    type(c_ptr) :: address

    address = c_null_ptr
    if (size(values) > 0) address = c_loc(values)
    status = execute_at(plan, address, size(values, kind=c_int64_t), 1_c_int, PETACOMM_XCHG_FLOAT64, op)
  end subroutine execute_real64

  subroutine execute_real64_k(plan, values, op, status)
    type(petacomm_xchg_plan), intent(in) :: plan
    real(c_double), intent(inout), target, contiguous :: values(:, :)
    integer, intent(in) :: op
    integer, intent(out) :: status
    type(c_ptr) :: address

    address = c_null_ptr
    if (size(values) > 0) address = c_loc(values)
    status = execute_at(plan, address, size(values, 2, kind=c_int64_t), int(size(values, 1), c_int), PETACOMM_XCHG_FLOAT64, op)
  end subroutine execute_real64_k

  subroutine execute_real32(plan, values, op, status)
    type(petacomm_xchg_plan), intent(in) :: plan
    real(c_float), intent(inout), target, contiguous :: values(:)
    integer, intent(in) :: op
    integer, intent(out) :: status
    type(c_ptr) :: address

    address = c_null_ptr
    if (size(values) > 0) address = c_loc(values)
    status = execute_at(plan, address, size(values, kind=c_int64_t), 1_c_int, PETACOMM_XCHG_FLOAT32, op)
  end subroutine execute_real32

  subroutine execute_real32_k(plan, values, op, status)
    type(petacomm_xchg_plan), intent(in) :: plan
    real(c_float), intent(inout), target, contiguous :: values(:, :)
    integer, intent(in) :: op
    integer, intent(out) :: status
    type(c_ptr) :: address

    address = c_null_ptr
    if (size(values) > 0) address = c_loc(values)
    status = execute_at(plan, address, size(values, 2, kind=c_int64_t), int(size(values, 1), c_int), PETACOMM_XCHG_FLOAT32, op)
  end subroutine execute_real32_k

  subroutine execute_int32(plan, values, op, status)
    type(petacomm_xchg_plan), intent(in) :: plan
    integer(c_int32_t), intent(inout), target, contiguous :: values(:)
    integer, intent(in) :: op
    integer, intent(out) :: status
    type(c_ptr) :: address

    address = c_null_ptr
    if (size(values) > 0) address = c_loc(values)
    status = execute_at(plan, address, size(values, kind=c_int64_t), 1_c_int, PETACOMM_XCHG_INT32, op)
  end subroutine execute_int32

  subroutine execute_int32_k(plan, values, op, status)
    type(petacomm_xchg_plan), intent(in) :: plan
    integer(c_int32_t), intent(inout), target, contiguous :: values(:, :)
    integer, intent(in) :: op
    integer, intent(out) :: status
    type(c_ptr) :: address

    address = c_null_ptr
    if (size(values) > 0) address = c_loc(values)
    status = execute_at(plan, address, size(values, 2, kind=c_int64_t), int(size(values, 1), c_int), PETACOMM_XCHG_INT32, op)
  end subroutine execute_int32_k

  subroutine execute_int64(plan, values, op, status)
    type(petacomm_xchg_plan), intent(in) :: plan
    integer(c_int64_t), intent(inout), target, contiguous :: values(:)
    integer, intent(in) :: op
    integer, intent(out) :: status
    type(c_ptr) :: address

    address = c_null_ptr
    if (size(values) > 0) address = c_loc(values)
    status = execute_at(plan, address, size(values, kind=c_int64_t), 1_c_int, PETACOMM_XCHG_INT64, op)
  end subroutine execute_int64

  subroutine execute_int64_k(plan, values, op, status)
    type(petacomm_xchg_plan), intent(in) :: plan
    integer(c_int64_t), intent(inout), target, contiguous :: values(:, :)
    integer, intent(in) :: op
    integer, intent(out) :: status
    type(c_ptr) :: address

    address = c_null_ptr
    if (size(values) > 0) address = c_loc(values)
    status = execute_at(plan, address, size(values, 2, kind=c_int64_t), int(size(values, 1), c_int), PETACOMM_XCHG_INT64, op)
  end subroutine execute_int64_k

  subroutine execute_complex64(plan, values, op, status)
    type(petacomm_xchg_plan), intent(in) :: plan
    complex(c_float_complex), intent(inout), target, contiguous :: values(:)
    integer, intent(in) :: op
    integer, intent(out) :: status
    type(c_ptr) :: address

    address = c_null_ptr
    if (size(values) > 0) address = c_loc(values)
    status = execute_at(plan, address, size(values, kind=c_int64_t), 1_c_int, PETACOMM_XCHG_COMPLEX64, op)
  end subroutine execute_complex64

  subroutine execute_complex64_k(plan, values, op, status)
    type(petacomm_xchg_plan), intent(in) :: plan
    complex(c_float_complex), intent(inout), target, contiguous :: values(:, :)
    integer, intent(in) :: op
    integer, intent(out) :: status
    type(c_ptr) :: address

    address = c_null_ptr
    if (size(values) > 0) address = c_loc(values)
    status = execute_at(plan, address, size(values, 2, kind=c_int64_t), int(size(values, 1), c_int), PETACOMM_XCHG_COMPLEX64, op)
  end subroutine execute_complex64_k

  subroutine execute_complex128(plan, values, op, status)
    type(petacomm_xchg_plan), intent(in) :: plan
    complex(c_double_complex), intent(inout), target, contiguous :: values(:)
    integer, intent(in) :: op
    integer, intent(out) :: status
    type(c_ptr) :: address

    address = c_null_ptr
    if (size(values) > 0) address = c_loc(values)
    status = execute_at(plan, address, size(values, kind=c_int64_t), 1_c_int, PETACOMM_XCHG_COMPLEX128, op)
  end subroutine execute_complex128

  subroutine execute_complex128_k(plan, values, op, status)
    type(petacomm_xchg_plan), intent(in) :: plan
    complex(c_double_complex), intent(inout), target, contiguous :: values(:, :)
    integer, intent(in) :: op
    integer, intent(out) :: status
    type(c_ptr) :: address

    address = c_null_ptr
    if (size(values) > 0) address = c_loc(values)
    status = execute_at(plan, address, size(values, 2, kind=c_int64_t), int(size(values, 1), c_int), PETACOMM_XCHG_COMPLEX128, op)
  end subroutine execute_complex128_k

end module petacomm_xchg
