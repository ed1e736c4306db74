! petacomm for Fortran, the core (core.h): status codes, error messages, version, the
! strategy registry's entry and the string conversions the family modules share. Programs
! `use petacomm` (petacomm.f90).
module petacomm_core
  use, intrinsic :: iso_c_binding, only: c_associated, c_char, c_f_pointer, c_int, c_null_char, &
                                         c_ptr, c_size_t
  implicit none
  private

  ! petacomm_status: every routine returns one in its `status` argument.
  integer(c_int), parameter, public :: PETACOMM_SUCCESS = 0
  integer(c_int), parameter, public :: PETACOMM_ERR_ARG = 1
  integer(c_int), parameter, public :: PETACOMM_ERR_MPI = 2
  integer(c_int), parameter, public :: PETACOMM_ERR_NOMEM = 3
  integer(c_int), parameter, public :: PETACOMM_ERR_STATE = 4
  integer(c_int), parameter, public :: PETACOMM_ERR_INTERNAL = 5

  !> One strategy of a family's registry (petacomm_strategy_info): C strings, read by the
  !> families' petacomm_<family>_strategy_info routines.
  type, bind(C), public :: petacomm_strategy_info
    type(c_ptr) :: name
    type(c_ptr) :: summary
    type(c_ptr) :: options
  end type petacomm_strategy_info

  public :: petacomm_last_error, petacomm_version
  public :: petacomm_c_string, petacomm_f_string

  interface
    function c_last_error() bind(C, name="petacomm_last_error") result(text)
      import :: c_ptr
      type(c_ptr) :: text
    end function c_last_error

    function c_version() bind(C, name="petacomm_version") result(text)
      import :: c_ptr
      type(c_ptr) :: text
    end function c_version

    function c_strlen(text) bind(C, name="strlen") result(length)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: text
      integer(c_size_t) :: length
    end function c_strlen
  end interface

contains

  !> The message of the last error on this thread ("" if none): it names the argument and
  !> the value at fault.
  function petacomm_last_error() result(message)
    character(len=:), allocatable :: message
    message = petacomm_f_string(c_last_error())
  end function petacomm_last_error

  !> The library version, e.g. "0.1.0".
  function petacomm_version() result(version)
    character(len=:), allocatable :: version
    version = petacomm_f_string(c_version())
  end function petacomm_version

  !> A Fortran copy of a NUL-terminated C string ("" for a NULL pointer).
  function petacomm_f_string(text) result(copy)
    type(c_ptr), intent(in) :: text
    character(len=:), allocatable :: copy
    character(kind=c_char), pointer :: chars(:)
    integer :: i, length

    if (.not. c_associated(text)) then
      copy = ""
      return
    end if
    length = int(c_strlen(text))
    call c_f_pointer(text, chars, [length])
    allocate (character(len=length) :: copy)
    do i = 1, length
      copy(i:i) = chars(i)
    end do
  end function petacomm_f_string

  !> A NUL-terminated C copy of a Fortran string, trailing blanks removed.
  pure function petacomm_c_string(text) result(chars)
    character(len=*), intent(in) :: text
    character(kind=c_char) :: chars(len_trim(text) + 1)
    integer :: i

    do i = 1, len_trim(text)
      chars(i) = text(i:i)
    end do
    chars(len_trim(text) + 1) = c_null_char
  end function petacomm_c_string

end module petacomm_core
