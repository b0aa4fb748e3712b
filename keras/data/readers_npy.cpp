// NumPy .npy and .npz files (numpy/lib/format.py: magic, version, a Python-literal header dict,
// raw data; .npz is a zip of .npy entries).
#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>

#include "keras/utils/zip.h"
#include "keras/utils/file_util.h"
#include "keras/data/readers.h"

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
    int64_t extent = 0;
    if (std::from_chars(inner.data() + p, inner.data() + e, extent).ec != std::errc())
      fail<IOError>(where, "extents in 'shape' that fit in int64", "'" + text + "'", "The header is corrupt.");
    shape.push_back(extent);
    p = e;
  }
  return shape;
}

// Bytes of data for `shape`, or an IOError when they overflow int64. Zero extents are counted as
// one so that a shape like (0, 2**62, 2**62) is refused too: its strides would overflow.
size_t data_bytes(const Shape& shape, size_t item, const std::string& where) {
  int64_t n = static_cast<int64_t>(item);
  bool empty = false;
  for (int64_t d : shape) {
    empty = empty || d == 0;
    if (__builtin_mul_overflow(n, std::max<int64_t>(d, 1), &n))
      fail<IOError>(where, "a shape whose size in bytes fits in int64", shape_str(shape), "The header is corrupt.");
  }
  return empty ? 0 : static_cast<size_t>(n);
}

// A numpy dtype as stored and the DType that holds it. The framework has no 8- or 16-bit types,
// so those widen (value for value) to int32 or float32.
struct Stored {
  DType dtype;
  size_t size;       // bytes per stored element
  char kind;         // numpy's kind letter: 'f', 'i', 'u' or 'b'
  const char* name;  // numpy's name, for errors
};

std::optional<Stored> stored_type(const std::string& kind) {
  static const std::map<std::string, Stored> kTypes = {
      {"f2", {DType::float32, 2, 'f', "float16"}}, {"f4", {DType::float32, 4, 'f', "float32"}},
      {"f8", {DType::float64, 8, 'f', "float64"}}, {"i1", {DType::int32, 1, 'i', "int8"}},
      {"i2", {DType::int32, 2, 'i', "int16"}},     {"i4", {DType::int32, 4, 'i', "int32"}},
      {"i8", {DType::int64, 8, 'i', "int64"}},     {"u1", {DType::int32, 1, 'u', "uint8"}},
      {"u2", {DType::int32, 2, 'u', "uint16"}},    {"b1", {DType::boolean, 1, 'b', "bool"}}};
  auto it = kTypes.find(kind);
  if (it == kTypes.end()) return std::nullopt;
  return it->second;
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
  if (exp == 0) {  // zero or subnormal: man * 2^-24
    const float v = std::ldexp(static_cast<float>(man), -24);
    return sign ? -v : v;
  }
  if (exp == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (man << 13));  // inf, NaN
  return std::bit_cast<float>(sign | ((exp + 127 - 15) << 23) | (man << 13));
}

// Reads `n` elements of 1 or 2 bytes each into the wider type of `st`.
void widen(const unsigned char* src, size_t n, const Stored& st, bool big_endian, void* dst) {
  for (size_t i = 0; i < n; ++i) {
    const unsigned char* p = src + i * st.size;
    uint16_t bits = p[0];
    if (st.size == 2) bits = big_endian ? static_cast<uint16_t>(p[0] << 8 | p[1]) : static_cast<uint16_t>(p[1] << 8 | p[0]);
    if (st.kind == 'f')
      static_cast<float*>(dst)[i] = half_to_float(bits);
    else if (st.kind == 'u')
      static_cast<int32_t*>(dst)[i] = bits;
    else
      static_cast<int32_t*>(dst)[i] = st.size == 1 ? static_cast<int8_t>(bits) : static_cast<int16_t>(bits);
  }
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
  const std::optional<Stored> st = stored_type(descr.substr(1));
  if (!st)
    fail<IOError>(where, "dtype float16/32/64 (<f2, <f4, <f8), int8/16/32/64 (|i1, <i2, <i4, <i8), uint8/16 (|u1, <u2) or bool (|b1)",
                  "'" + descr + "'", "Convert the array with numpy's astype before saving.");
  const DType dtype = st->dtype;
  if (order != '<' && order != '>' && order != '|' && order != '=')
    fail<IOError>(where, "a byte-order mark <, >, | or = in 'descr'", "'" + descr + "'");
  const std::string fortran = dict_value(header, "fortran_order");
  if (fortran != "True" && fortran != "False")
    fail<IOError>(where, "'fortran_order' True or False in the header", fortran.empty() ? "none" : fortran);
  Shape shape = parse_shape(dict_value(header, "shape"), where);

  const size_t want = data_bytes(shape, st->size, where);
  const size_t have = bytes.size() - header_at - header_len;
  if (have != want)
    fail<IOError>(where, std::to_string(want) + " bytes of " + std::string(st->name) + " data for shape " + shape_str(shape),
                  std::to_string(have) + " bytes", have < want ? "The file is truncated." : "The file has trailing data.");
  Shape stored = shape;
  if (fortran == "True") std::reverse(stored.begin(), stored.end());
  Tensor t = Tensor::empty(stored, dtype, Device::cpu());
  const auto* src = reinterpret_cast<const unsigned char*>(bytes.data() + header_at + header_len);
  if (st->size != dtype_size(dtype)) {
    widen(src, want / st->size, *st, order == '>', t.raw_data());
  } else {
    if (want) std::memcpy(t.raw_data(), src, want);
    if (order == '>' && st->size > 1) {
      auto* p = static_cast<unsigned char*>(t.raw_data());
      for (size_t i = 0; i < want; i += st->size) std::reverse(p + i, p + i + st->size);
    }
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
