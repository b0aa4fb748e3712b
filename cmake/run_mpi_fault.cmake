# ctest mpi_fault_<mode>: runs the data-parallel test program's fault case under mpirun with 2
# processes, process 1 failing (MODE=throw: an exception; MODE=kill: SIGKILL), and checks that the
# job ends with a non-zero status, within 60 s, and that the output names process 1.
#   cmake -DMPIRUN="mpiexec;--oversubscribe;..." -DPROGRAM=<test program> -DMODE=throw -P run_mpi_fault.cmake
foreach(var MPIRUN PROGRAM MODE)
  if(NOT ${var})
    message(FATAL_ERROR "run_mpi_fault: expected -D${var}=..., got none")
  endif()
endforeach()
string(TIMESTAMP start "%s")
execute_process(
  COMMAND ${MPIRUN} -np 2 -x KERAS_DP_FAULT=${MODE} ${PROGRAM} --gtest_filter=DataParallelFaults.*
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
string(TIMESTAMP end "%s")
math(EXPR seconds "${end} - ${start}")
set(all "${out}\n${err}")
if(status EQUAL 0)
  message(FATAL_ERROR "run_mpi_fault: expected the job to fail, got status 0 after ${seconds} s:\n${all}")
endif()
if(status MATCHES "timeout" OR seconds GREATER_EQUAL 60)
  message(FATAL_ERROR "run_mpi_fault: expected the job to end within 60 s, got ${seconds} s (${status}):\n${all}")
endif()
if(MODE STREQUAL "throw")
  set(expected "process 1 of 2 failed during fit: injected failure at batch 1")
else()
  set(expected "rank 1")
endif()
string(FIND "${all}" "${expected}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "run_mpi_fault: expected the output to name the failed process ('${expected}'), got:\n${all}")
endif()
message(STATUS "run_mpi_fault: ${MODE}: the job ended in ${seconds} s with status ${status}, naming process 1")
