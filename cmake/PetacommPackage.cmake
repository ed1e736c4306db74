# Installs what other projects build against:
#   lib/cmake/petacomm/petacommConfig.cmake (+ version file, exported targets):
#     find_package(petacomm [COMPONENTS xchg prof fortran ...]) then link petacomm::petacomm,
#     petacomm::<family> (petacomm::xchg, petacomm::prof, ...) or petacomm::fortran;
#   lib/pkgconfig/petacomm.pc, petacomm-prof.pc and, with the Fortran module,
#   petacomm-fortran.pc.
# Both are relocatable (paths relative to where they are installed), so they also work from
# the wheel's petacomm/_native directory. See docs/packaging.md.
include(CMakePackageConfigHelpers)
set(_package_dir lib/cmake/petacomm)

install(EXPORT petacommTargets NAMESPACE petacomm:: DESTINATION ${_package_dir})
# What the config file needs to find the same MPI (and compiler, for Fortran modules).
set(PETACOMM_PACKAGE_MPI_C_COMPILER "${PETACOMM_MPI_C_COMPILER}")
set(PETACOMM_PACKAGE_MPI_CXX_COMPILER "${MPI_CXX_COMPILER}")
set(PETACOMM_PACKAGE_Fortran_COMPILER_ID "${CMAKE_Fortran_COMPILER_ID}")
set(PETACOMM_PACKAGE_Fortran_COMPILER_VERSION "${CMAKE_Fortran_COMPILER_VERSION}")
configure_package_config_file(cmake/package/petacommConfig.cmake.in
  ${CMAKE_BINARY_DIR}/package/petacommConfig.cmake INSTALL_DESTINATION ${_package_dir})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/package/petacommConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/package/petacommConfig.cmake
              ${CMAKE_BINARY_DIR}/package/petacommConfigVersion.cmake
        DESTINATION ${_package_dir})

string(REPLACE ";" " " _pc_families "${PETACOMM_BUILT_FAMILIES}")
set(_pc_files petacomm)
if(TARGET petacomm-prof)
  list(APPEND _pc_files petacomm-prof)
endif()
if(TARGET petacomm-fortran)
  list(APPEND _pc_files petacomm-fortran)
endif()
foreach(_pc ${_pc_files})
  configure_file(cmake/package/${_pc}.pc.in ${CMAKE_BINARY_DIR}/lib/pkgconfig/${_pc}.pc @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/lib/pkgconfig/${_pc}.pc DESTINATION lib/pkgconfig)
endforeach()
