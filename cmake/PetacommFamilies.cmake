# Resolves PETACOMM_FAMILIES (the cache setting: 'all' or a list) against PETACOMM_ALL_FAMILIES
# (the families that exist) into PETACOMM_BUILT_FAMILIES, in build order. An unknown name
# stops the configuration, naming it and the known ones.

foreach(_family ${PETACOMM_ALL_FAMILIES})
  if(NOT EXISTS ${PROJECT_SOURCE_DIR}/native/src/${_family}/CMakeLists.txt)
    message(FATAL_ERROR "petacomm: family '${_family}' is listed in PETACOMM_ALL_FAMILIES "
                        "but native/src/${_family}/CMakeLists.txt does not exist")
  endif()
endforeach()

if(PETACOMM_FAMILIES STREQUAL "all")
  set(PETACOMM_BUILT_FAMILIES ${PETACOMM_ALL_FAMILIES})
else()
  string(REPLACE "," ";" _requested "${PETACOMM_FAMILIES}")
  foreach(_family ${_requested})
    if(NOT _family IN_LIST PETACOMM_ALL_FAMILIES)
      string(REPLACE ";" ", " _known "${PETACOMM_ALL_FAMILIES}")
      message(FATAL_ERROR
        "petacomm: PETACOMM_FAMILIES: unknown family '${_family}' (known: ${_known}; "
        "or 'all', the default; an empty list builds the core only)")
    endif()
  endforeach()
  set(PETACOMM_BUILT_FAMILIES "")
  foreach(_family ${PETACOMM_ALL_FAMILIES})
    if(_family IN_LIST _requested)
      list(APPEND PETACOMM_BUILT_FAMILIES ${_family})
    endif()
  endforeach()
endif()
string(REPLACE ";" ", " _built "${PETACOMM_BUILT_FAMILIES}")
message(STATUS "petacomm: families: ${_built}")

# The same list as JSON for build-info.json (read by the Python side and the tests).
set(PETACOMM_FAMILIES_JSON "")
foreach(_family ${PETACOMM_BUILT_FAMILIES})
  if(PETACOMM_FAMILIES_JSON)
    string(APPEND PETACOMM_FAMILIES_JSON ", ")
  endif()
  string(APPEND PETACOMM_FAMILIES_JSON "\"${_family}\"")
endforeach()
