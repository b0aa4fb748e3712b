// The generic walk of inspect_file: every dataset of an HDF5 file, its stored type, and the
// Lister that turns datasets into entries once each.
#include <algorithm>
#include <cctype>

#include "backend/errors.h"
#include "keras/saving/hdf5/detail/hdf5_c.h"
#include "keras/saving/detail/inspect_walk.h"

namespace keras::detail::inspect {

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    if (slash > start) parts.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return parts;
}

std::string join(const std::vector<std::string>& parts, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end; ++i) out += (out.empty() ? "" : "/") + parts[i];
  return out;
}

bool is_number(const std::string& s) {
  return !s.empty() && s.size() < 10 && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t i2 = i, j2 = j;
      while (i2 < a.size() && std::isdigit(static_cast<unsigned char>(a[i2]))) ++i2;
      while (j2 < b.size() && std::isdigit(static_cast<unsigned char>(b[j2]))) ++j2;
      std::string x = a.substr(i, i2 - i), y = b.substr(j, j2 - j);
      x.erase(0, std::min(x.find_first_not_of('0'), x.size()));
      y.erase(0, std::min(y.find_first_not_of('0'), y.size()));
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = i2, j = j2;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i, ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

const json* member(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

json string_member(const json& j, const char* key) {
  const json* m = member(j, key);
  return m && m->is_string() ? *m : json(nullptr);
}

// What h5py would print, not the widened type Dataset::dtype() reads into.
std::string stored_dtype(const hdf5::Dataset& ds) {
  if (ds.is_bfloat16()) return "bfloat16";
  hdf5::detail::quiet();
  hdf5::Handle type = hdf5::detail::own(H5Dget_type(ds.id()), ds.where(), "reading the data type");
  const size_t bits = H5Tget_size(type.get()) * 8;
  switch (H5Tget_class(type.get())) {
    case H5T_FLOAT: return "float" + std::to_string(bits);
    case H5T_INTEGER: return (H5Tget_sign(type.get()) == H5T_SGN_2 ? "int" : "uint") + std::to_string(bits);
    case H5T_ENUM: return H5Tget_nmembers(type.get()) == 2 && bits == 8 ? "bool" : "enum";  // h5py's bool
    case H5T_STRING: return "string";
    case H5T_OPAQUE: return "opaque" + std::to_string(bits);
    case H5T_COMPOUND: return "compound";
    default: return "other";
  }
}

namespace {

// Relative paths of every dataset under `group`, children in natural order.
void collect_datasets(const hdf5::Group& group, const std::string& prefix, int depth, std::vector<std::string>& out) {
  if (depth > kMaxDepth)
    fail<IOError>(group.where(), "a group tree at most " + std::to_string(kMaxDepth) + " levels deep", "a deeper one",
                  "The file is corrupt.");
  std::vector<std::string> names = group.children();
  std::sort(names.begin(), names.end(), natural_less);
  for (const auto& name : names) {
    const std::string rel = prefix.empty() ? name : prefix + "/" + name;
    if (group.has_dataset(name)) {
      out.push_back(rel);
    } else if (group.has_group(name)) {
      collect_datasets(group.open_group(name), rel, depth + 1, out);
    }  // dangling links and named types hold no data
  }
}

}  // namespace

Lister::Lister(hdf5::Group root) : root_(std::move(root)) { collect_datasets(root_, "", 0, all_); }

void Lister::add(json& list, const std::string& rel, json layer, json name, json index) {
  if (listed(rel) || !root_.has_dataset(rel)) return;
  listed_.insert(rel);
  hdf5::Dataset ds = root_.open_dataset(rel);
  json shape = json::array();
  for (int64_t d : ds.shape()) shape.push_back(d);
  list.push_back({{"path", "/" + rel}, {"layer", std::move(layer)}, {"name", std::move(name)},
                  {"index", std::move(index)}, {"shape", std::move(shape)}, {"dtype", stored_dtype(ds)}});
}

void Lister::add_rest(json& list, const std::string& prefix, const json& layer, const std::string& name_base) {
  for (const auto& rel : all_) {
    if (listed(rel) || (!prefix.empty() && rel.rfind(prefix + "/", 0) != 0)) continue;
    json name = name_base.empty() ? json(nullptr) : json(rel.substr(name_base.size() + 1));
    add(list, rel, layer, name);
  }
}

}  // namespace keras::detail::inspect
