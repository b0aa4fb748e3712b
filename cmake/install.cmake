# Installs the library so that other CMake projects can use it:
#   find_package(keras CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE keras::keras)
# Headers go to <prefix>/include/keras/<folder>/, the target's INSTALL_INTERFACE include
# directory, so both <keras/keras.h> and the library's own "backend/tensor.h" resolve.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(KERAS_INSTALL_INCLUDEDIR include/keras)
set(KERAS_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/keras)

install(TARGETS keras EXPORT kerasTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The public headers are every header of the library's source folders.
foreach(dir ${KERAS_SOURCE_DIRS})
  file(GLOB headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${dir}/*.h)
  if(headers)
    install(FILES ${headers} DESTINATION ${KERAS_INSTALL_INCLUDEDIR}/${dir})
  endif()
endforeach()

install(EXPORT kerasTargets
  NAMESPACE keras::
  FILE kerasTargets.cmake
  DESTINATION ${KERAS_INSTALL_CMAKEDIR})

configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/kerasConfig.cmake.in
  ${PROJECT_BINARY_DIR}/kerasConfig.cmake
  INSTALL_DESTINATION ${KERAS_INSTALL_CMAKEDIR})
# 0.x releases make no compatibility promise across minor versions.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/kerasConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/kerasConfig.cmake
  ${PROJECT_BINARY_DIR}/kerasConfigVersion.cmake
  DESTINATION ${KERAS_INSTALL_CMAKEDIR})
