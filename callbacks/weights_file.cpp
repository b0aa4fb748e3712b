#include "callbacks/weights_file.h"

#include <zlib.h>

#include <bit>
#include <cstring>
#include <map>
#include <set>

#include "layers/layer.h"

namespace keras::callbacks {

static_assert(std::endian::native == std::endian::little, "the weights file is written little-endian");

namespace {

constexpr char kMagic[8] = {'K', 'E', 'R', 'A', 'S', 'W', 'T', '1'};

std::string file_where(const std::string& filename) { return "Weights file '" + filename + "'"; }

uint32_t crc_of(const char* data, size_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes uInt lengths: feed large tensors in pieces.
  while (n > 0) {
    uInt piece = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data), piece);
    data += piece;
    n -= piece;
  }
  return static_cast<uint32_t>(crc);
}

template <class T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// Bounds-checked reading; errors name the file and the entry being read.
class Reader {
 public:
  Reader(const std::string& filename, const std::string& bytes) : filename_(filename), bytes_(bytes) {}
  size_t pos() const { return pos_; }
  bool at_end() const { return pos_ == bytes_.size(); }
  void set_entry(std::string entry) { entry_ = std::move(entry); }
  template <class T>
  T get(const char* what) {
    T v;
    std::memcpy(&v, take(sizeof v, what), sizeof v);
    return v;
  }
  const char* take(size_t n, const char* what) {
    if (n > bytes_.size() - pos_)
      fail(std::string("the ") + what + " (" + std::to_string(n) + " bytes)",
           "the file ends after " + std::to_string(bytes_.size()) + " bytes", "The file is truncated.");
    const char* p = bytes_.data() + pos_;
    pos_ += n;
    return p;
  }
  [[noreturn]] void fail(const std::string& expected, const std::string& got, const std::string& hint = "") const {
    keras::fail<IOError>(file_where(filename_) + (entry_.empty() ? "" : ", " + entry_), expected, got, hint);
  }
  const std::string& bytes() const { return bytes_; }

 private:
  const std::string& filename_;
  const std::string& bytes_;
  std::string entry_;
  size_t pos_ = 0;
};

}  // namespace

void write_tensor_file(const std::string& filename, const std::vector<NamedTensor>& entries) {
  std::set<std::string> seen;
  std::string out(kMagic, sizeof kMagic);
  put<uint64_t>(out, entries.size());
  put<uint32_t>(out, crc_of(out.data(), out.size()));
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    if (e.path.empty() || !seen.insert(e.path).second)
      fail<ValueError>(file_where(filename), "unique, non-empty entry paths",
                       e.path.empty() ? "an empty path at entry " + std::to_string(i) : "'" + e.path + "' twice");
    Tensor t = (e.value.device() == Device::cpu() ? e.value : e.value.to(Device::cpu())).contiguous();
    size_t start = out.size();
    put<uint32_t>(out, static_cast<uint32_t>(e.path.size()));
    out += e.path;
    std::string dt = dtype_name(t.dtype());
    put<uint8_t>(out, static_cast<uint8_t>(dt.size()));
    out += dt;
    put<uint32_t>(out, static_cast<uint32_t>(t.rank()));
    for (int64_t d : t.shape()) put<int64_t>(out, d);
    put<uint64_t>(out, t.nbytes());
    out.append(static_cast<const char*>(t.raw_data()), t.nbytes());
    put<uint32_t>(out, crc_of(out.data() + start, out.size() - start));
  }
  write_file_atomic(filename, out);
}

std::vector<NamedTensor> read_tensor_file(const std::string& filename) {
  std::string bytes = read_file_bytes(filename);
  Reader r(filename, bytes);
  r.set_entry("header");
  const char* magic = r.take(sizeof kMagic, "magic");
  if (std::memcmp(magic, kMagic, sizeof kMagic) != 0)
    r.fail("the magic \"KERASWT1\"", "other bytes", "This is not a weights file of this framework.");
  uint64_t count = r.get<uint64_t>("entry count");
  uint32_t header_crc = r.get<uint32_t>("header checksum");
  if (header_crc != crc_of(bytes.data(), sizeof kMagic + sizeof count))
    r.fail("a matching header checksum", "a mismatch", "The file is corrupt.");
  std::vector<NamedTensor> entries;
  for (uint64_t i = 0; i < count; ++i) {
    size_t start = r.pos();
    r.set_entry("entry " + std::to_string(i));
    uint32_t path_len = r.get<uint32_t>("path length");
    std::string path(r.take(path_len, "path"), path_len);
    r.set_entry("entry " + std::to_string(i) + " '" + path + "'");
    uint8_t dt_len = r.get<uint8_t>("dtype length");
    std::string dt(r.take(dt_len, "dtype"), dt_len);
    uint32_t rank = r.get<uint32_t>("rank");
    if (rank > 64) r.fail("a rank of at most 64", std::to_string(rank), "The file is corrupt.");
    Shape shape;
    for (uint32_t k = 0; k < rank; ++k) shape.push_back(r.get<int64_t>("dimension"));
    uint64_t nbytes = r.get<uint64_t>("data size");
    const char* data = r.take(nbytes, "data");
    uint32_t crc = r.get<uint32_t>("checksum");
    if (crc != crc_of(bytes.data() + start, r.pos() - start - sizeof crc))
      r.fail("a matching checksum", "a mismatch", "The file is corrupt.");
    DType dtype;
    try {
      dtype = dtype_from_name(dt);
    } catch (const TypeError&) {
      r.fail("a known dtype", "'" + dt + "'");
    }
    for (int64_t d : shape)
      if (d < 0) r.fail("non-negative dimensions", shape_str(shape));
    if (static_cast<uint64_t>(shape_numel(shape)) * dtype_size(dtype) != nbytes)
      r.fail(std::to_string(shape_numel(shape) * static_cast<int64_t>(dtype_size(dtype))) + " data bytes for " +
                 dt + " " + shape_str(shape),
             std::to_string(nbytes));
    Tensor t = Tensor::empty(shape, dtype, Device::cpu());
    if (nbytes) std::memcpy(t.raw_data(), data, nbytes);
    entries.push_back({path, t});
  }
  r.set_entry("");
  if (!r.at_end())
    r.fail("the end of the file after " + std::to_string(count) + " entries",
           std::to_string(bytes.size() - r.pos()) + " trailing bytes", "The file is corrupt.");
  return entries;
}

void save_variables(const std::vector<Variable>& variables, const std::string& filename) {
  std::vector<NamedTensor> entries;
  entries.reserve(variables.size());
  for (const auto& v : variables) entries.push_back({v.path(), v.value()});
  write_tensor_file(filename, entries);
}

void load_variables(const std::vector<Variable>& variables, const std::string& filename) {
  std::vector<NamedTensor> entries = read_tensor_file(filename);
  std::map<std::string, const Tensor*> by_path;
  for (const auto& e : entries) by_path[e.path] = &e.value;
  std::string where = file_where(filename);
  std::set<std::string> wanted;
  // Check everything first: a mismatch must not leave the model half-loaded.
  for (const auto& v : variables) {
    wanted.insert(v.path());
    auto it = by_path.find(v.path());
    if (it == by_path.end())
      fail<IOError>(where, "an entry '" + v.path() + "'", "none among " + std::to_string(entries.size()) + " entries",
                    "The file was saved from a different model.");
    const Tensor& t = *it->second;
    if (t.shape() != v.shape())
      fail<IOError>(where + ", entry '" + v.path() + "'", "shape " + shape_str(v.shape()), shape_str(t.shape()));
    if (t.dtype() != v.dtype() && !(is_floating(t.dtype()) && is_floating(v.dtype())))
      fail<IOError>(where + ", entry '" + v.path() + "'", "dtype " + dtype_name(v.dtype()), dtype_name(t.dtype()));
  }
  for (const auto& e : entries)
    if (!wanted.count(e.path))
      fail<IOError>(where + ", entry '" + e.path + "'", "a variable of that path in the model", "none",
                    "The file was saved from a different model.");
  for (const auto& v : variables) {
    Variable target = v;
    target.assign(*by_path.at(v.path()));
  }
}

void save_weights_file(const Layer& model, const std::string& filename) { save_variables(model.weights(), filename); }

void load_weights_file(Layer& model, const std::string& filename) { load_variables(model.weights(), filename); }

}  // namespace keras::callbacks
