// Datasets of the HDF5 wrapper: tensors in and out, with the checks that keep a corrupt header
// from turning into a huge allocation or a read past the stored data.
#include <cstring>
#include <limits>

#include "keras/saving/hdf5/detail/hdf5_c.h"
#include "keras/saving/hdf5/hdf5.h"

namespace keras::hdf5 {

using detail::check;
using detail::own;
using detail::quiet;

namespace {

hid_t memory_type(DType dtype) {
  switch (dtype) {
    case DType::float32: return H5T_NATIVE_FLOAT;
    case DType::float64: return H5T_NATIVE_DOUBLE;
    case DType::int32: return H5T_NATIVE_INT32;
    case DType::int64: return H5T_NATIVE_INT64;
    case DType::boolean: break;
  }
  return -1;
}

// Little-endian file types, whatever the host (keras-formats.md section 0).
hid_t file_type(DType dtype) {
  switch (dtype) {
    case DType::float32: return H5T_IEEE_F32LE;
    case DType::float64: return H5T_IEEE_F64LE;
    case DType::int32: return H5T_STD_I32LE;
    case DType::int64: return H5T_STD_I64LE;
    case DType::boolean: break;
  }
  return -1;
}

float bfloat16_to_float(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

}  // namespace

Shape Dataset::shape() const {
  quiet();
  Handle space = own(H5Dget_space(id()), where(), "reading the dataspace");
  H5S_class_t cls = H5Sget_simple_extent_type(space.get());
  if (cls == H5S_SCALAR) return {};
  if (cls != H5S_SIMPLE) fail<IOError>(where(), "a scalar or array dataset", "a null or unknown dataspace");
  int rank = check(H5Sget_simple_extent_ndims(space.get()), where(), "reading the rank");
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  check(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr), where(), "reading the dimensions");
  Shape shape;
  int64_t numel = 1;
  std::string text;
  for (hsize_t d : dims) text += (text.empty() ? "" : ", ") + std::to_string(d);
  for (hsize_t d : dims) {
    if (d > static_cast<hsize_t>(std::numeric_limits<int64_t>::max()) ||
        __builtin_mul_overflow(numel, static_cast<int64_t>(d), &numel))
      fail<IOError>(where(), "an element count that fits in 64 bits", "dimensions (" + text + ")",
                    "The file is corrupt.");
    shape.push_back(static_cast<int64_t>(d));
  }
  return shape;
}

bool Dataset::is_bfloat16() const {
  if (!has_attr("dtype")) return false;
  try {
    return read_string_attr("dtype") == "bfloat16";
  } catch (const IOError&) {
    return false;  // a non-string "dtype" attribute is not Keras's tag
  }
}

DType Dataset::dtype() const {
  quiet();
  if (is_bfloat16()) return DType::float32;
  Handle type = own(H5Dget_type(id()), where(), "reading the data type");
  H5T_class_t cls = H5Tget_class(type.get());
  size_t size = H5Tget_size(type.get());
  if (cls == H5T_FLOAT) return size >= 8 ? DType::float64 : DType::float32;
  if (cls == H5T_INTEGER) {
    bool is_signed = H5Tget_sign(type.get()) == H5T_SGN_2;
    return size < 4 || (size == 4 && is_signed) ? DType::int32 : DType::int64;
  }
  fail<IOError>(where(), "numeric data (float or integer)",
                "HDF5 type class " + std::to_string(static_cast<int>(cls)),
                "Weights are stored as float32 arrays.");
}

Tensor Dataset::read(const Shape& expected) const {
  Shape stored = shape();
  if (stored != expected) fail<IOError>(where(), "shape " + shape_str(expected), shape_str(stored));
  return read();
}

Tensor Dataset::read() const {
  quiet();
  Shape dims = shape();
  const int64_t numel = shape_numel(dims);  // overflow-checked by shape()
  const bool bf16 = is_bfloat16();
  const DType dtype = this->dtype();
  Handle type = own(H5Dget_type(id()), where(), "reading the data type");
  const size_t stored_size = H5Tget_size(type.get());
  if (bf16 && stored_size != 2)
    fail<IOError>(where(), "2-byte elements for a bfloat16 dataset", std::to_string(stored_size) + "-byte ones");
  uint64_t need = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(numel), static_cast<uint64_t>(stored_size), &need) ||
      __builtin_mul_overflow(static_cast<uint64_t>(numel), static_cast<uint64_t>(dtype_size(dtype)), &need))
    fail<IOError>(where(), "a data size that fits in 64 bits", "shape " + shape_str(dims), "The file is corrupt.");
  need = static_cast<uint64_t>(numel) * stored_size;
  // Uncompressed data must all be stored: a corrupt shape cannot then cause a huge allocation.
  Handle dcpl = own(H5Dget_create_plist(id()), where(), "reading the dataset's creation properties");
  H5D_layout_t layout = H5Pget_layout(dcpl.get());
  if ((layout == H5D_CONTIGUOUS || layout == H5D_COMPACT) && numel > 0) {
    hsize_t have = H5Dget_storage_size(id());
    if (have < need)
      fail<IOError>(where(), std::to_string(need) + " stored bytes for shape " + shape_str(dims),
                    std::to_string(have), "The file is truncated or corrupt.");
  }
  Tensor out = Tensor::empty(dims, dtype, Device::cpu());
  if (numel == 0) return out;
  if (bf16) {
    std::vector<uint16_t> raw(static_cast<size_t>(numel));
    // Keras stores bf16 as 2-byte opaque elements; read them with their own type, unconverted.
    check(H5Dread(id(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.data()), where(), "reading the data");
    float* dst = out.data<float>();
    for (size_t i = 0; i < raw.size(); ++i) dst[i] = bfloat16_to_float(raw[i]);
    return out;
  }
  check(H5Dread(id(), memory_type(dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.raw_data()), where(), "reading the data");
  return out;
}

Dataset Group::write_dataset(const std::string& name, const Tensor& t) {
  quiet();
  const std::string at = where(name);
  if (name.empty()) fail<ValueError>(where(), "a non-empty dataset name", "''");
  if (!t.defined()) fail<ValueError>(at, "a defined tensor", "an undefined one");
  if (file_type(t.dtype()) < 0)
    fail<TypeError>(at, "a float32, float64, int32 or int64 tensor", dtype_name(t.dtype()));
  if (exists(name)) fail<IOError>(at, "a new dataset", "an existing object of that name");
  Tensor host = (t.device() == Device::cpu() ? t : t.to(Device::cpu())).contiguous();
  Handle space;
  if (host.rank() == 0) {
    space = own(H5Screate(H5S_SCALAR), at, "creating a dataspace");
  } else {
    std::vector<hsize_t> dims(host.shape().begin(), host.shape().end());
    space = own(H5Screate_simple(host.rank(), dims.data(), nullptr), at, "creating a dataspace");
  }
  Handle lcpl = own(H5Pcreate(H5P_LINK_CREATE), at, "creating a property list");
  check(H5Pset_create_intermediate_group(lcpl.get(), 1), at, "setting intermediate group creation");
  // The default creation list is contiguous and unfiltered, as Keras's files are.
  Handle ds = own(H5Dcreate2(id(), name.c_str(), file_type(host.dtype()), space.get(), lcpl.get(), H5P_DEFAULT,
                             H5P_DEFAULT),
                  at, "creating the dataset");
  if (host.numel() > 0)
    check(H5Dwrite(ds.get(), memory_type(host.dtype()), H5S_ALL, H5S_ALL, H5P_DEFAULT, host.raw_data()), at,
          "writing the data");
  return Dataset(std::move(ds), file_, child_path(name), heaps_);
}

}  // namespace keras::hdf5
