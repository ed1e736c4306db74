! petacomm for Fortran: `use petacomm` gives every family's interface (one module per family,
! petacomm_<family>.f90, all built into libpetacomm-fortran). Fortran 2008 with
! ISO_C_BINDING over the C API; see docs/packaging.md for building and linking.
module petacomm
  use petacomm_core
  use petacomm_xchg
  implicit none
  public
  private :: petacomm_c_string, petacomm_f_string
end module petacomm
