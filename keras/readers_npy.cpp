// NumPy .npy and .npz files (numpy/lib/format.py: magic, version, a Python-literal header dict,
// raw data; .npz is a zip of .npy entries).
#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>

#include "keras/data_zip.h"
#include "keras/file_util.h"
#include "keras/readers.h"

namespace keras::data {

namespace {

const char kMagic[] = "\x93NUMPY";

std::string read_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail<IOError>(what + " '" + path + "'", "a readable file", "a missing or unreadable file");
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The value text following 'key': in the header dict, or empty when the key is absent.
std::string dict_value(const std::string& header, const std::string& key) {
  for (char q : {'\'', '"'}) {
    const std::string k = std::string(1, q) + key + q;
    size_t p = header.find(k);
    if (p == std::string::npos) continue;
    p = header.find(':', p + k.size());
    if (p == std::string::npos) return "";
    ++p;
    while (p < header.size() && header[p] == ' ') ++p;
    if (p >= header.size()) return "";
    if (header[p] == '\'' || header[p] == '"') {
      size_t e = header.find(header[p], p + 1);
      return e == std::string::npos ? "" : header.substr(p, e - p + 1);
    }
    if (header[p] == '(') {
      size_t e = header.find(')', p);
      return e == std::string::npos ? "" : header.substr(p, e - p + 1);
    }
    size_t e = header.find_first_of(",}", p);
    std::string v = header.substr(p, e == std::string::npos ? std::string::npos : e - p);
    while (!v.empty() && v.back() == ' ') v.pop_back();
    return v;
  }
  return "";
}

Shape parse_shape(const std::string& text, const std::string& where) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')')
    fail<IOError>(where, "a 'shape' tuple in the header", text.empty() ? "none" : "'" + text + "'");
  Shape shape;
  std::string inner = text.substr(1, text.size() - 2);
  size_t p = 0;
  while (p < inner.size()) {
    while (p < inner.size() && (inner[p] == ' ' || inner[p] == ',')) ++p;
    if (p >= inner.size()) break;
    size_t e = p;
    while (e < inner.size() && inner[e] >= '0' && inner[e] <= '9') ++e;
    if (e == p) fail<IOError>(where, "non-negative integer extents in 'shape'", "'" + text + "'");
    shape.push_back(std::stoll(inner.substr(p, e - p)));
    p = e;
  }
  return shape;
}

std::string descr_of(DType t) {
  switch (t) {
    case DType::float32: return "<f4";
    case DType::float64: return "<f8";
    case DType::int32: return "<i4";
    case DType::int64: return "<i8";
    case DType::boolean: return "|b1";
  }
  return "";
}

}  // namespace

Tensor parse_npy(const std::string& bytes, const std::string& where) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, 6) != 0)
    fail<IOError>(where, "the .npy magic string \\x93NUMPY", bytes.size() < 10 ? "a file of " + std::to_string(bytes.size()) + " bytes" : "other bytes",
                  "The file is not a NumPy .npy array.");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0, header_at = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    header_at = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) fail<IOError>(where, "a complete .npy preamble", "a truncated one");
    for (int i = 3; i >= 0; --i) header_len = (header_len << 8) | static_cast<unsigned char>(bytes[8 + static_cast<size_t>(i)]);
    header_at = 12;
  } else {
    fail<IOError>(where, ".npy format version 1, 2 or 3", "version " + std::to_string(major));
  }
  if (header_at + header_len > bytes.size())
    fail<IOError>(where, "a header of " + std::to_string(header_len) + " bytes", std::to_string(bytes.size() - header_at) + " bytes",
                  "The file is truncated.");
  const std::string header = bytes.substr(header_at, header_len);
  const std::string descr_q = dict_value(header, "descr");
  if (descr_q.size() < 4) fail<IOError>(where, "a 'descr' entry in the header", "'" + header + "'");
  const std::string descr = descr_q.substr(1, descr_q.size() - 2);
  const char order = descr[0];
  const std::string kind = descr.substr(1);
  DType dtype;
  if (kind == "f4") dtype = DType::float32;
  else if (kind == "f8") dtype = DType::float64;
  else if (kind == "i4") dtype = DType::int32;
  else if (kind == "i8") dtype = DType::int64;
  else if (kind == "b1") dtype = DType::boolean;
  else
    fail<IOError>(where, "dtype float32 (<f4), float64 (<f8), int32 (<i4), int64 (<i8) or bool (|b1)", "'" + descr + "'",
                  "Convert the array with numpy's astype before saving.");
  if (order != '<' && order != '>' && order != '|' && order != '=')
    fail<IOError>(where, "a byte-order mark <, >, | or = in 'descr'", "'" + descr + "'");
  const std::string fortran = dict_value(header, "fortran_order");
  if (fortran != "True" && fortran != "False")
    fail<IOError>(where, "'fortran_order' True or False in the header", fortran.empty() ? "none" : fortran);
  Shape shape = parse_shape(dict_value(header, "shape"), where);

  const size_t item = dtype_size(dtype);
  const size_t want = static_cast<size_t>(shape_numel(shape)) * item;
  const size_t have = bytes.size() - header_at - header_len;
  if (have != want)
    fail<IOError>(where, std::to_string(want) + " bytes of " + dtype_name(dtype) + " data for shape " + shape_str(shape),
                  std::to_string(have) + " bytes", have < want ? "The file is truncated." : "The file has trailing data.");
  Shape stored = shape;
  if (fortran == "True") std::reverse(stored.begin(), stored.end());
  Tensor t = Tensor::empty(stored, dtype, Device::cpu());
  if (want) std::memcpy(t.raw_data(), bytes.data() + header_at + header_len, want);
  if (order == '>' && item > 1) {
    auto* p = static_cast<unsigned char*>(t.raw_data());
    for (size_t i = 0; i < want; i += item) std::reverse(p + i, p + i + item);
  }
  if (fortran == "True" && shape.size() > 1) t = t.permuted().contiguous();
  return t;
}

std::string serialize_npy(const Tensor& t_in) {
  Tensor t = t_in.detach().contiguous().to(Device::cpu());
  std::string shape = "(";
  for (size_t i = 0; i < t.shape().size(); ++i) shape += std::to_string(t.shape()[i]) + (t.shape().size() == 1 ? "," : i + 1 < t.shape().size() ? ", " : "");
  shape += ")";
  std::string header = "{'descr': '" + descr_of(t.dtype()) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces so that the data starts on a 64-byte boundary, as numpy does.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out(kMagic, 6);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>((header.size() >> 8) & 0xFF);
  out += header;
  out.append(static_cast<const char*>(t.raw_data()), t.nbytes());
  return out;
}

Tensor load_npy(const std::string& path) {
  return parse_npy(read_file(path, "npy file"), "npy file '" + path + "'");
}

void save_npy(const std::string& path, const Tensor& t) { write_file_atomic(path, serialize_npy(t)); }

std::map<std::string, Tensor> load_npz(const std::string& path) {
  std::map<std::string, Tensor> out;
  for (auto& e : zip::read_archive(path)) {
    std::string name = e.name;
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0) name.resize(name.size() - 4);
    out[name] = parse_npy(e.data, "npz file '" + path + "', entry '" + e.name + "'");
  }
  return out;
}

void save_npz(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& arrays, bool compressed) {
  std::vector<zip::Entry> entries;
  for (const auto& [name, t] : arrays) entries.push_back({name + ".npy", serialize_npy(t)});
  zip::write_archive(path, entries, compressed);
}

}  // namespace keras::data
