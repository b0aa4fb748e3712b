// Internals shared by the hdf5 wrapper's sources. Kept out of the installed headers (keras/detail is
// not a source folder) because it includes the C API's header, which only the library sees.
#pragma once
#include <hdf5.h>

#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>

#include "backend/errors.h"
#include "keras/saving/hdf5/hdf5.h"

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

// HDF5 1.10 trusts the global heap collections of a file (where variable-length strings live,
// so every h5py string attribute) and the references to them: a corrupt object size or
// reference sends its reads out of bounds or into an endless loop. These checks run first.
struct HeapIndex {
  size_t address_size = 8;  // bytes of a file address (superblock)
  // Collection address (relative to the superblock) -> object index -> object size.
  std::unordered_map<uint64_t, std::unordered_map<uint32_t, uint64_t>> objects;
};

// Walks every collection in `bytes` (a whole file) with bounds checks and indexes its objects.
// IOError naming `where` for a broken one; null when no superblock is found (HDF5 then refuses
// the file itself).
std::shared_ptr<const HeapIndex> check_global_heaps(std::string_view bytes, const std::string& where);

// IOError naming `where` unless every element of the variable-length string attribute `attr`
// refers to an indexed heap object no longer than the element.
void check_vlen_references(hid_t attr, hssize_t count, const HeapIndex& heaps, const std::string& where);

}  // namespace keras::hdf5::detail
