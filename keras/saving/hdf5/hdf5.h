// A small RAII layer over the HDF5 C library: just what the Keras file formats need
// (keras-formats.md sections 1-3), with every failure an IOError that names the file and the
// object path:
//   "model.weights.h5: /layers/dense/vars/0: expected shape (4, 3), got (3, 4)."
// HDF5's own error printing is switched off; its innermost message ends up in the IOError.
//
//   auto file = hdf5::File::create_in_memory("w.weights.h5");
//   file.root().create_group("layers/dense/vars").write_dataset("0", kernel);
//   write_file_atomic("w.weights.h5", file.image());
//   auto back = hdf5::File::open("w.weights.h5");
//   Tensor k = back.root().open_dataset("layers/dense/vars/0").read({4, 3});
//
// Handles are reference-counted copies of HDF5 identifiers: a Group or Dataset stays usable after
// its File object is gone (the library closes the file with its last open object). The HDF5
// build must be thread-safe for use from several threads (Debian's is).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/tensor.h"

namespace keras::hdf5 {

// hid_t of the C API (int64_t since HDF5 1.10); kept opaque so users need no HDF5 headers.
using Id = int64_t;

namespace detail {
struct HeapIndex;
}

// Owns one reference to an identifier of any kind (file, group, dataset, type, space, list).
class Handle {
 public:
  Handle() = default;
  explicit Handle(Id id) : id_(id) {}
  Handle(const Handle& other);
  Handle& operator=(const Handle& other);
  Handle(Handle&& other) noexcept : id_(other.id_) { other.id_ = -1; }
  Handle& operator=(Handle&& other) noexcept;
  ~Handle();
  Id get() const { return id_; }
  bool valid() const { return id_ >= 0; }

 private:
  void release();
  Id id_ = -1;
};

// Keras splits string-list attributes longer than this many bytes into `name0`, `name1`, ...
constexpr size_t kAttributeByteLimit = 64512;

// Attributes, common to groups and datasets.
class Object {
 public:
  // The file's display name, as given when it was opened or created.
  const std::string& file_name() const { return file_; }
  // Absolute path inside the file ("/" for the root).
  const std::string& path() const { return path_; }
  // "<file>: <path>[/child]", the `where` of this object's error messages.
  std::string where(const std::string& child = "") const;
  // Absolute path of a child given relative to this object.
  std::string child_path(const std::string& child) const;
  Id id() const { return handle_.get(); }

  bool has_attr(const std::string& name) const;
  // Attribute names in name order.
  std::vector<std::string> attr_names() const;
  // A scalar (or one-element) string attribute, variable- or fixed-length, any padding.
  // IOError when missing or not a string.
  std::string read_string_attr(const std::string& name) const;
  // Writes a scalar variable-length UTF-8 string (h5py's form for `str`); replaces an existing one.
  void write_string_attr(const std::string& name, const std::string& value);
  // True when `name` or its split form `name0` exists.
  bool has_string_list_attr(const std::string& name) const;
  // A string array, fixed- or variable-length; an empty attribute of any type reads as {}; a
  // scalar string as one element. When `name` is absent, the split parts `name0`, `name1`, ...
  // are concatenated (Keras's rule for long lists). IOError when neither form exists.
  std::vector<std::string> read_string_list_attr(const std::string& name) const;
  // Writes a fixed-length, null-padded byte-string array (numpy 'S', as Keras writes
  // layer_names); an empty list as an empty float64 array (as h5py does). Lists over
  // kAttributeByteLimit bytes are split like Keras (`name0`, `name1`, ... of near-equal
  // length). ValueError when one string alone exceeds the limit.
  void write_string_list_attr(const std::string& name, const std::vector<std::string>& values);
  // A scalar numeric attribute (integer or float), converted to double.
  double read_number_attr(const std::string& name) const;
  void write_number_attr(const std::string& name, double value);  // float64 scalar
  void write_int_attr(const std::string& name, int64_t value);    // int64 scalar

 protected:
  Object() = default;
  Object(Handle handle, std::string file, std::string path, std::shared_ptr<const detail::HeapIndex> heaps)
      : handle_(std::move(handle)), file_(std::move(file)), path_(std::move(path)), heaps_(std::move(heaps)) {}
  void remove_attr_if_present(const std::string& name);
  Handle handle_;
  std::string file_;
  std::string path_;
  // The file's checked global heaps (null for files this process creates): variable-length
  // reads are verified against them first, because HDF5 1.10 trusts what it finds there.
  std::shared_ptr<const detail::HeapIndex> heaps_;
};

class Dataset : public Object {
 public:
  // Dimensions (empty for a scalar). IOError for a null dataspace or an element count that
  // overflows int64.
  Shape shape() const;
  // True when tagged with attribute dtype="bfloat16" (Keras 3's bf16 weights).
  bool is_bfloat16() const;
  // The dtype read() returns: float32 / float64 for floats (16-bit and bf16 widen to float32),
  // int32 for integers of up to 32 bits that fit, int64 otherwise. IOError for non-numeric data.
  DType dtype() const;
  // The data as a contiguous host tensor of dtype(). IOError when the stored bytes are fewer
  // than the shape needs (a corrupt header) or HDF5 fails.
  Tensor read() const;
  // The same after checking the shape against `expected` (IOError naming both shapes), before
  // anything is allocated.
  Tensor read(const Shape& expected) const;

 private:
  friend class Group;
  using Object::Object;
};

class Group : public Object {
 public:
  Group() = default;
  // Whether an object exists at `name` (a relative path, may contain '/'; a missing
  // intermediate group means false).
  bool exists(const std::string& name) const;
  bool has_group(const std::string& name) const;
  bool has_dataset(const std::string& name) const;
  // IOError when missing or of the other kind.
  Group open_group(const std::string& name) const;
  Dataset open_dataset(const std::string& name) const;
  // Creates the group (and missing intermediate groups); IOError when it already exists.
  Group create_group(const std::string& name);
  // Opens the group, creating it when missing.
  Group require_group(const std::string& name);
  // Writes `t` (float32/float64/int32/int64, any device, any rank including 0) little-endian,
  // contiguous and uncompressed; missing intermediate groups are created. IOError when the name
  // exists; TypeError for a bool tensor.
  Dataset write_dataset(const std::string& name, const Tensor& t);
  // Names of the direct children, in creation order when the group tracks it, else name order.
  std::vector<std::string> children() const;

 private:
  friend class File;
  using Object::Object;
  std::optional<Id> open_object(const std::string& name, int* type) const;
};

class File {
 public:
  // A new, empty file held in memory (no backing store); `display_name` names it in errors.
  static File create_in_memory(const std::string& display_name);
  // Opens a file on disk read-only. IOError naming it when missing, truncated or not HDF5.
  static File open(const std::string& path);
  // Opens an in-memory copy of a file's bytes read-only (a member of a zip, say).
  static File open_image(std::string_view bytes, const std::string& display_name);

  Group root() const;
  // The complete file as bytes (flushed first), ready for write_file_atomic or a zip member.
  std::string image() const;
  const std::string& name() const { return name_; }

 private:
  File(Handle handle, std::string name, std::shared_ptr<const detail::HeapIndex> heaps)
      : handle_(std::move(handle)), name_(std::move(name)), heaps_(std::move(heaps)) {}
  Handle handle_;
  std::string name_;
  std::shared_ptr<const detail::HeapIndex> heaps_;
};

// True when `bytes` start with the HDF5 signature (at offset 0, 512, 1024, ...).
bool looks_like_hdf5(std::string_view bytes);

}  // namespace keras::hdf5
