# Finds oneDNN (Debian's libdnnl-dev ships no CMake config). Defines DNNL::dnnl.
find_path(DNNL_INCLUDE_DIR NAMES oneapi/dnnl/dnnl.hpp dnnl.hpp)
find_library(DNNL_LIBRARY NAMES dnnl)
if(DNNL_INCLUDE_DIR AND EXISTS "${DNNL_INCLUDE_DIR}/oneapi/dnnl/dnnl_version.h")
  file(STRINGS "${DNNL_INCLUDE_DIR}/oneapi/dnnl/dnnl_version.h" _dnnl_ver REGEX "#define DNNL_VERSION_(MAJOR|MINOR|PATCH) ")
  string(REGEX REPLACE ".*MAJOR ([0-9]+).*" "\\1" _maj "${_dnnl_ver}")
  string(REGEX REPLACE ".*MINOR ([0-9]+).*" "\\1" _min "${_dnnl_ver}")
  string(REGEX REPLACE ".*PATCH ([0-9]+).*" "\\1" _pat "${_dnnl_ver}")
  set(DNNL_VERSION "${_maj}.${_min}.${_pat}")
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(DNNL
  REQUIRED_VARS DNNL_LIBRARY DNNL_INCLUDE_DIR
  VERSION_VAR DNNL_VERSION
  FAIL_MESSAGE "oneDNN not found: install Debian's libdnnl-dev (scripts/setup.sh does)")
if(DNNL_FOUND AND NOT TARGET DNNL::dnnl)
  add_library(DNNL::dnnl UNKNOWN IMPORTED)
  set_target_properties(DNNL::dnnl PROPERTIES
    IMPORTED_LOCATION "${DNNL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${DNNL_INCLUDE_DIR}")
endif()
mark_as_advanced(DNNL_INCLUDE_DIR DNNL_LIBRARY)
