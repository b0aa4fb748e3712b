# ctest `layering`: every #include of the library's own headers points down the layers of
# DESIGN.md section 2 (the README's Layout table). Run as
#   cmake -DSOURCE_DIR=<tree> -P cmake/check_layering.cmake
# and fails with one line per offending include: "<file>: <folder>/ may not include <header>".
# A source folder missing from the table below is an error too, so a new folder states its place,
# and so is a relative include ("../saving/saving.h"), which would slip past the table.
cmake_minimum_required(VERSION 3.22)
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "check_layering: expected -DSOURCE_DIR=<source tree>, got none")
endif()

# What the files of each folder (and its subfolders) may include. A path belongs to the first
# folder of `folders` it lies in (keras/saving/hdf5 to keras/saving; keras's rooms before keras).
# `keras` alone is the umbrella header keras/keras.h, the one file kept directly in keras/, and
# nothing inside the library includes it.
set(allowed_backend backend)
set(allowed_layers backend layers)
set(allowed_losses backend losses)
set(allowed_metrics backend losses metrics)
set(allowed_optimizers backend optimizers)
set(allowed_keras/utils backend keras/utils)
set(allowed_keras/profiler backend keras/utils keras/profiler)
set(allowed_keras/data backend keras/utils keras/data)
set(allowed_keras/datasets backend keras/utils keras/data keras/datasets)
set(allowed_keras/distribute backend keras/utils keras/distribute)
set(allowed_keras/models backend layers losses metrics optimizers keras/utils keras/profiler keras/data keras/distribute keras/models)
set(allowed_keras/saving ${allowed_keras/models} keras/saving)
set(allowed_keras/debugging ${allowed_keras/models} keras/debugging)
set(allowed_keras/applications ${allowed_keras/saving} keras/applications)
set(allowed_keras/export ${allowed_keras/models} keras/export)
set(allowed_callbacks ${allowed_keras/saving} callbacks)
set(allowed_keras ${allowed_callbacks} keras/datasets keras/applications keras/debugging keras/export)
set(folders
  keras/utils keras/profiler keras/data keras/datasets keras/distribute keras/models keras/saving keras/applications keras/debugging keras/export
  backend layers losses metrics optimizers callbacks keras)

# The table folder a relative path ("keras/saving/hdf5/hdf5.h") belongs to, or "" for none.
function(folder_of path out)
  set(result "")
  foreach(f ${folders})
    string(FIND "${path}" "${f}/" at)
    if(at EQUAL 0)
      set(result ${f})
      break()
    endif()
  endforeach()
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

set(roots backend layers losses metrics optimizers keras callbacks)
set(problems "")
foreach(root ${roots})
  file(GLOB_RECURSE files RELATIVE ${SOURCE_DIR}
    ${SOURCE_DIR}/${root}/*.h ${SOURCE_DIR}/${root}/*.cpp ${SOURCE_DIR}/${root}/*.cu ${SOURCE_DIR}/${root}/*.cuh)
  foreach(file ${files})
    folder_of("${file}" from)
    if(from STREQUAL "keras" AND NOT file STREQUAL "keras/keras.h")
      string(REGEX MATCH "^keras/[^/]+$" top_level "${file}")
      if(top_level)
        string(APPEND problems "${file}: expected only the umbrella header keras/keras.h directly in keras/; move it into the room it belongs to\n")
      else()
        string(APPEND problems "${file}: its folder is not in the table of cmake/check_layering.cmake; add it with the folders it may include\n")
      endif()
      continue()
    endif()
    file(STRINGS ${SOURCE_DIR}/${file} lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
    foreach(line ${lines})
      string(REGEX MATCH "[<\"]([^>\"]+)[>\"]" _ "${line}")
      set(header "${CMAKE_MATCH_1}")
      if(header MATCHES "(^|/)\\.\\.?/")
        string(APPEND problems "${file}: expected an include from the source root, got the relative ${header}\n")
        continue()
      endif()
      string(REGEX MATCH "^([a-z_]+)/" _ "${header}")
      if(NOT CMAKE_MATCH_1 IN_LIST roots)
        continue()  # a system or third-party header
      endif()
      folder_of("${header}" to)
      if(header STREQUAL "keras/keras.h")
        set(to umbrella)
      endif()
      if(NOT to IN_LIST allowed_${from})
        string(REPLACE ";" ", " may "${allowed_${from}}")
        string(APPEND problems "${file}: ${from}/ may not include ${header} (it may include: ${may})\n")
      endif()
    endforeach()
  endforeach()
endforeach()

if(problems)
  # Printed unwrapped (FATAL_ERROR text is wrapped at 80 columns), one problem a line.
  message(NOTICE "${problems}")
  message(FATAL_ERROR "check_layering: expected includes that point down the layers (README, Layout), got the ones above")
endif()
message(STATUS "check_layering: every include in ${SOURCE_DIR} points down the layers")
