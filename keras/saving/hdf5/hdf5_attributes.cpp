// Attributes of the HDF5 wrapper: strings in both of h5py's forms, string lists with Keras's
// split rule, numbers.
#include <algorithm>

#include "keras/saving/hdf5/detail/hdf5_c.h"
#include "keras/saving/hdf5/hdf5.h"

namespace keras::hdf5 {

using detail::check;
using detail::own;
using detail::quiet;

namespace {

herr_t collect_attr_name(hid_t, const char* name, const H5A_info_t*, void* out) {
  static_cast<std::vector<std::string>*>(out)->emplace_back(name);
  return 0;
}

// Every element of a string attribute, whatever its storage form.
std::vector<std::string> read_strings(hid_t attr, const std::string& where, const detail::HeapIndex* heaps) {
  Handle type = own(H5Aget_type(attr), where, "reading the attribute's type");
  Handle space = own(H5Aget_space(attr), where, "reading the attribute's dataspace");
  hssize_t count = check(H5Sget_simple_extent_npoints(space.get()), where, "counting the attribute's elements");
  H5T_class_t cls = H5Tget_class(type.get());
  if (count == 0) return {};  // h5py writes an empty list as a float64 array of length 0
  if (cls != H5T_STRING) fail<IOError>(where, "a string attribute", "an attribute of another type");
  // Every element occupies stored bytes (a variable-length one at least its reference): a
  // corrupt element count must not size an allocation.
  const hsize_t stored = H5Aget_storage_size(attr);
  if (static_cast<hsize_t>(count) > stored)
    fail<IOError>(where, "at most " + std::to_string(stored) + " elements in " + std::to_string(stored) + " stored bytes",
                  std::to_string(count), "The file is corrupt.");
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(count));
  if (H5Tis_variable_str(type.get()) > 0) {
    if (heaps) detail::check_vlen_references(attr, count, *heaps, where);
    Handle mem = own(H5Tcopy(H5T_C_S1), where, "creating a string type");
    check(H5Tset_size(mem.get(), H5T_VARIABLE), where, "creating a string type");
    check(H5Tset_cset(mem.get(), H5Tget_cset(type.get())), where, "creating a string type");
    std::vector<char*> ptrs(static_cast<size_t>(count), nullptr);
    check(H5Aread(attr, mem.get(), ptrs.data()), where, "reading the attribute");
    for (char* p : ptrs) out.emplace_back(p ? p : "");
#if H5_VERSION_GE(1, 12, 0)
    H5Treclaim(mem.get(), space.get(), H5P_DEFAULT, ptrs.data());
#else
    H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, ptrs.data());
#endif
    return out;
  }
  size_t size = H5Tget_size(type.get());
  if (size == 0) fail<IOError>(where, "a string size above 0", "0");
  if (size > stored || static_cast<hsize_t>(count) > stored / size)
    fail<IOError>(where, std::to_string(stored) + " stored bytes for " + std::to_string(count) + " strings of " +
                             std::to_string(size) + " bytes",
                  "fewer", "The file is corrupt.");
  std::string buffer(static_cast<size_t>(count) * size, '\0');
  // Reading with the stored type itself copies the raw bytes.
  check(H5Aread(attr, type.get(), buffer.data()), where, "reading the attribute");
  bool space_padded = H5Tget_strpad(type.get()) == H5T_STR_SPACEPAD;
  for (hssize_t i = 0; i < count; ++i) {
    std::string s = buffer.substr(static_cast<size_t>(i) * size, size);
    s.resize(std::min(s.size(), s.find('\0')));
    if (space_padded) s.erase(s.find_last_not_of(' ') + 1);
    out.push_back(std::move(s));
  }
  return out;
}

Handle open_attr(hid_t obj, const std::string& name, const std::string& where) {
  htri_t exists = H5Aexists(obj, name.c_str());
  if (exists <= 0) {
    H5Eclear2(H5E_DEFAULT);
    fail<IOError>(where, "an attribute '" + name + "'", "none");
  }
  return own(H5Aopen(obj, name.c_str(), H5P_DEFAULT), where, "opening attribute '" + name + "'");
}

// numpy.array_split's sizes: the first (n % k) parts one longer.
std::vector<size_t> split_sizes(size_t n, size_t parts) {
  std::vector<size_t> sizes(parts, n / parts);
  for (size_t i = 0; i < n % parts; ++i) ++sizes[i];
  return sizes;
}

}  // namespace

bool Object::has_attr(const std::string& name) const {
  quiet();
  htri_t r = H5Aexists(id(), name.c_str());
  if (r < 0) H5Eclear2(H5E_DEFAULT);
  return r > 0;
}

std::vector<std::string> Object::attr_names() const {
  quiet();
  std::vector<std::string> names;
  check(H5Aiterate2(id(), H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_attr_name, &names), where(),
        "listing the attributes");
  return names;
}

void Object::remove_attr_if_present(const std::string& name) {
  if (has_attr(name)) check(H5Adelete(id(), name.c_str()), where(), "replacing attribute '" + name + "'");
}

std::string Object::read_string_attr(const std::string& name) const {
  quiet();
  std::string at = where() + " attribute '" + name + "'";
  Handle attr = open_attr(id(), name, where());
  std::vector<std::string> values = read_strings(attr.get(), at, heaps_.get());
  if (values.size() != 1) fail<IOError>(at, "one string", std::to_string(values.size()) + " elements");
  return values[0];
}

void Object::write_string_attr(const std::string& name, const std::string& value) {
  quiet();
  std::string at = where() + " attribute '" + name + "'";
  remove_attr_if_present(name);
  Handle type = own(H5Tcopy(H5T_C_S1), at, "creating a string type");
  check(H5Tset_size(type.get(), H5T_VARIABLE), at, "creating a string type");
  check(H5Tset_cset(type.get(), H5T_CSET_UTF8), at, "creating a string type");
  Handle space = own(H5Screate(H5S_SCALAR), at, "creating a dataspace");
  Handle attr = own(H5Acreate2(id(), name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), at,
                    "creating the attribute");
  const char* p = value.c_str();
  check(H5Awrite(attr.get(), type.get(), &p), at, "writing the attribute");
}

bool Object::has_string_list_attr(const std::string& name) const { return has_attr(name) || has_attr(name + "0"); }

std::vector<std::string> Object::read_string_list_attr(const std::string& name) const {
  quiet();
  if (has_attr(name)) {
    Handle attr = open_attr(id(), name, where());
    return read_strings(attr.get(), where() + " attribute '" + name + "'", heaps_.get());
  }
  if (!has_attr(name + "0")) fail<IOError>(where(), "an attribute '" + name + "' (or '" + name + "0', ...)", "none");
  std::vector<std::string> out;
  for (int part = 0; has_attr(name + std::to_string(part)); ++part) {
    std::string part_name = name + std::to_string(part);
    Handle attr = open_attr(id(), part_name, where());
    for (auto& s : read_strings(attr.get(), where() + " attribute '" + part_name + "'", heaps_.get())) out.push_back(std::move(s));
  }
  return out;
}

void Object::write_string_list_attr(const std::string& name, const std::vector<std::string>& values) {
  quiet();
  std::string at = where() + " attribute '" + name + "'";
  size_t width = 1;  // numpy's 'S' dtype is at least one byte wide
  for (const auto& v : values) width = std::max(width, v.size());
  if (width > kAttributeByteLimit)
    fail<ValueError>(at, "strings of at most " + std::to_string(kAttributeByteLimit) + " bytes",
                     "one of " + std::to_string(width) + " bytes");
  remove_attr_if_present(name);
  for (int part = 0; has_attr(name + std::to_string(part)); ++part) remove_attr_if_present(name + std::to_string(part));
  if (values.empty()) {
    hsize_t zero = 0;
    Handle space = own(H5Screate_simple(1, &zero, nullptr), at, "creating a dataspace");
    own(H5Acreate2(id(), name.c_str(), H5T_IEEE_F64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), at,
        "creating the attribute");
    return;
  }
  Handle type = own(H5Tcopy(H5T_C_S1), at, "creating a string type");
  check(H5Tset_size(type.get(), width), at, "creating a string type");
  check(H5Tset_strpad(type.get(), H5T_STR_NULLPAD), at, "creating a string type");
  size_t parts = 1;
  auto too_big = [&](size_t p) {
    return split_sizes(values.size(), p)[0] * width > kAttributeByteLimit;
  };
  while (too_big(parts)) ++parts;
  size_t first = 0;
  for (size_t part = 0; part < parts; ++part) {
    size_t n = split_sizes(values.size(), parts)[part];
    std::string attr_name = parts == 1 ? name : name + std::to_string(part);
    std::string buffer(n * width, '\0');
    for (size_t i = 0; i < n; ++i) values[first + i].copy(buffer.data() + i * width, width);
    hsize_t dims = n;
    Handle space = own(H5Screate_simple(1, &dims, nullptr), at, "creating a dataspace");
    Handle attr = own(H5Acreate2(id(), attr_name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), at,
                      "creating the attribute");
    check(H5Awrite(attr.get(), type.get(), buffer.data()), at, "writing the attribute");
    first += n;
  }
}

double Object::read_number_attr(const std::string& name) const {
  quiet();
  std::string at = where() + " attribute '" + name + "'";
  Handle attr = open_attr(id(), name, where());
  Handle type = own(H5Aget_type(attr.get()), at, "reading the attribute's type");
  Handle space = own(H5Aget_space(attr.get()), at, "reading the attribute's dataspace");
  H5T_class_t cls = H5Tget_class(type.get());
  if (cls != H5T_INTEGER && cls != H5T_FLOAT) fail<IOError>(at, "a numeric attribute", "an attribute of another type");
  hssize_t count = H5Sget_simple_extent_npoints(space.get());
  if (count != 1) fail<IOError>(at, "one number", std::to_string(count) + " elements");
  double value = 0;
  check(H5Aread(attr.get(), H5T_NATIVE_DOUBLE, &value), at, "reading the attribute");
  return value;
}

namespace {
void write_scalar(hid_t obj_id, const std::string& name, hid_t file_type, hid_t mem_type, const void* v,
                  const std::string& at) {
  Handle space = own(H5Screate(H5S_SCALAR), at, "creating a dataspace");
  Handle attr = own(H5Acreate2(obj_id, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT), at,
                    "creating the attribute");
  check(H5Awrite(attr.get(), mem_type, v), at, "writing the attribute");
}
}  // namespace

void Object::write_number_attr(const std::string& name, double value) {
  quiet();
  remove_attr_if_present(name);
  write_scalar(id(), name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value, where() + " attribute '" + name + "'");
}

void Object::write_int_attr(const std::string& name, int64_t value) {
  quiet();
  remove_attr_if_present(name);
  write_scalar(id(), name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value, where() + " attribute '" + name + "'");
}

}  // namespace keras::hdf5
