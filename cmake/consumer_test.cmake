# ctest `install_consumer`: installs this build into a scratch prefix, then configures, builds
# and runs tests/consumer against it, the way a user's project consumes the library.
# Included from tests/CMakeLists.txt.
add_test(NAME install_consumer
  COMMAND ${CMAKE_COMMAND}
    -DKERAS_BUILD_DIR=${PROJECT_BINARY_DIR}
    -DKERAS_SOURCE_DIR=${PROJECT_SOURCE_DIR}
    -DWORK_DIR=${PROJECT_BINARY_DIR}/install_consumer
    -DCXX_COMPILER=${CMAKE_CXX_COMPILER}
    -P ${PROJECT_SOURCE_DIR}/cmake/run_consumer_test.cmake)
set_tests_properties(install_consumer PROPERTIES TIMEOUT 600 LABELS install ENVIRONMENT "KERAS_NUM_THREADS=2")
