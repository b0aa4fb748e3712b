// Internals shared by the hdf5 wrapper's sources. Kept out of the installed headers (keras/detail is
// not a source folder) because it includes the C API's header, which only the library sees.
#pragma once
#include <hdf5.h>

#include <string>
#include <type_traits>

#include "backend/errors.h"
#include "keras/hdf5.h"

namespace keras::hdf5::detail {

static_assert(std::is_same_v<hid_t, Id>, "keras::hdf5::Id must be HDF5's hid_t");

// Turns off HDF5's automatic error printing for the calling thread (the error stack is
// per-thread in thread-safe builds). Cheap after the first call; every entry point calls it.
void quiet();

// The innermost and outermost messages of the HDF5 error stack ("unable to open file: file
// signature not found"), then clears it. "no HDF5 message" when the stack is empty.
std::string error_text();

// IOError "<where>: expected <action> to succeed, got <HDF5 message>" when `status` < 0.
template <class T>
T check(T status, const std::string& where, const std::string& action) {
  if (status < 0) fail<IOError>(where, action + " to succeed", error_text());
  return status;
}

// A Handle for a freshly returned identifier, IOError as check() when it is negative.
inline Handle own(hid_t id, const std::string& where, const std::string& action) {
  check(id, where, action);
  return Handle(id);
}

}  // namespace keras::hdf5::detail
