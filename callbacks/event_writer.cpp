#include "callbacks/event_writer.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "backend/errors.h"

namespace keras::callbacks::tfevents {

namespace {

// ---- CRC-32C, table-driven (one byte at a time is plenty for summary-sized records) ----
std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}

// ---- protobuf wire format: only what Event/Summary need ----
// Wire types: 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32.
class Proto {
 public:
  void varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  void key(int field, int wire) { varint((static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wire)); }
  void fixed64(uint64_t v) {
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  void fixed32(uint32_t v) {
    for (int i = 0; i < 4; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  void raw_double(double d) {
    uint64_t bits;
    std::memcpy(&bits, &d, 8);
    fixed64(bits);
  }
  void raw_float(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    fixed32(bits);
  }

  void double_field(int field, double d) { key(field, 1), raw_double(d); }
  void float_field(int field, float f) { key(field, 5), raw_float(f); }
  // int64 fields encode negatives as 10-byte two's complement varints.
  void int64_field(int field, int64_t v) { key(field, 0), varint(static_cast<uint64_t>(v)); }
  void bytes_field(int field, std::string_view b) {
    key(field, 2);
    varint(b.size());
    out_.append(b.data(), b.size());
  }
  void packed_doubles(int field, const std::vector<double>& v) {
    Proto p;
    for (double d : v) p.raw_double(d);
    bytes_field(field, p.str());
  }
  const std::string& str() const { return out_; }

 private:
  std::string out_;
};

// Event{wall_time, step, summary{value}} around one serialised Value.
std::string event_with_value(double wall_time, int64_t step, const std::string& value) {
  Proto summary;
  summary.bytes_field(1, value);  // Summary.value (repeated)
  Proto event;
  event.double_field(1, wall_time);
  if (step != 0) event.int64_field(2, step);  // proto3 leaves defaults out
  event.bytes_field(5, summary.str());        // Event.summary
  return event.str();
}

std::string hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

std::atomic<uint64_t> g_file_counter{0};

}  // namespace

uint32_t crc32c(std::string_view data) {
  static const std::array<uint32_t, 256> table = make_crc_table();
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : data) c = table[(c ^ b) & 0xffu] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(std::string_view data) {
  uint32_t c = crc32c(data);
  return ((c >> 15) | (c << 17)) + 0xA282EAD8u;
}

std::string frame_record(std::string_view data) {
  Proto header;
  header.fixed64(data.size());
  std::string out = header.str();
  Proto crcs;
  crcs.fixed32(masked_crc32c(out));
  out += crcs.str();
  out.append(data.data(), data.size());
  Proto tail;
  tail.fixed32(masked_crc32c(data));
  out += tail.str();
  return out;
}

Histogram make_histogram(const std::vector<double>& values, int bucket_count) {
  if (bucket_count < 1) fail<ValueError>("tfevents::make_histogram", "bucket_count >= 1", std::to_string(bucket_count));
  Histogram h;
  std::vector<double> finite;
  finite.reserve(values.size());
  for (double v : values)
    if (std::isfinite(v)) finite.push_back(v);
  if (finite.empty()) return h;
  h.min = h.max = finite[0];
  for (double v : finite) {
    h.min = std::min(h.min, v);
    h.max = std::max(h.max, v);
    h.sum += v;
    h.sum_squares += v * v;
  }
  h.num = static_cast<double>(finite.size());
  if (h.min == h.max) {
    h.bucket_limit = {h.max};
    h.bucket = {h.num};
    return h;
  }
  const double width = (h.max - h.min) / bucket_count;
  h.bucket_limit.resize(static_cast<size_t>(bucket_count));
  h.bucket.assign(static_cast<size_t>(bucket_count), 0.0);
  for (int i = 0; i < bucket_count; ++i) h.bucket_limit[static_cast<size_t>(i)] = h.min + (i + 1) * width;
  h.bucket_limit.back() = h.max;  // exact, whatever the rounding of min + n * width
  for (double v : finite) {
    auto i = static_cast<int64_t>((v - h.min) / width);
    i = std::clamp<int64_t>(i, 0, bucket_count - 1);
    h.bucket[static_cast<size_t>(i)] += 1;
  }
  return h;
}

std::string encode_file_version_event(double wall_time, std::string_view file_version) {
  Proto event;
  event.double_field(1, wall_time);
  event.bytes_field(3, file_version);  // Event.file_version
  return event.str();
}

std::string encode_simple_scalar_event(double wall_time, int64_t step, std::string_view tag, float value) {
  Proto v;
  v.bytes_field(1, tag);       // Value.tag
  v.float_field(2, value);     // Value.simple_value
  return event_with_value(wall_time, step, v.str());
}

std::string encode_tensor_scalar_event(double wall_time, int64_t step, std::string_view tag, float value,
                                       bool with_metadata) {
  Proto tensor;
  tensor.int64_field(1, 1);    // TensorProto.dtype = DT_FLOAT
  tensor.bytes_field(2, "");   // tensor_shape: empty TensorShapeProto (a scalar)
  Proto fv;
  fv.raw_float(value);
  tensor.bytes_field(5, fv.str());  // float_val, packed
  Proto v;
  v.bytes_field(1, tag);
  v.bytes_field(8, tensor.str());  // Value.tensor
  if (with_metadata) {
    Proto plugin;
    plugin.bytes_field(1, "scalars");  // PluginData.plugin_name; content left empty
    Proto meta;
    meta.bytes_field(1, plugin.str());  // SummaryMetadata.plugin_data
    meta.int64_field(4, 1);             // data_class = DATA_CLASS_SCALAR
    v.bytes_field(9, meta.str());       // Value.metadata
  }
  return event_with_value(wall_time, step, v.str());
}

std::string encode_histogram_event(double wall_time, int64_t step, std::string_view tag, const Histogram& histo) {
  Proto h;
  h.double_field(1, histo.min);
  h.double_field(2, histo.max);
  h.double_field(3, histo.num);
  h.double_field(4, histo.sum);
  h.double_field(5, histo.sum_squares);
  if (!histo.bucket_limit.empty()) h.packed_doubles(6, histo.bucket_limit);
  if (!histo.bucket.empty()) h.packed_doubles(7, histo.bucket);
  Proto v;
  v.bytes_field(1, tag);
  v.bytes_field(5, h.str());  // Value.histo
  return event_with_value(wall_time, step, v.str());
}

double unix_time_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

EventFileWriter::EventFileWriter(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail<IOError>("EventFileWriter", "a writable log directory", "'" + dir + "': " + ec.message());
  const double now = unix_time_now();
  // The counter keeps two writers opened in the same second in one directory apart.
  path_ = (std::filesystem::path(dir) /
           ("events.out.tfevents." + std::to_string(static_cast<int64_t>(now)) + "." + hostname() + "." +
            std::to_string(static_cast<long>(getpid())) + "." + std::to_string(g_file_counter++) + ".v2"))
              .string();
  file_ = std::fopen(path_.c_str(), "wb");
  if (!file_) fail<IOError>("EventFileWriter", "a writable event file", "'" + path_ + "': " + std::strerror(errno));
  write_event(encode_file_version_event(now));
  flush();
}

EventFileWriter::~EventFileWriter() {
  try {
    close();
  } catch (...) {
    // A destructor must not throw; a failed final flush is reported by an explicit close().
  }
}

void EventFileWriter::add_scalar(const std::string& tag, double value, int64_t step) {
  const bool first = tags_with_metadata_.insert(tag).second;
  write_event(encode_tensor_scalar_event(unix_time_now(), step, tag, static_cast<float>(value), first));
}

void EventFileWriter::add_histogram(const std::string& tag, const std::vector<double>& values, int64_t step) {
  write_event(encode_histogram_event(unix_time_now(), step, tag, make_histogram(values)));
}

void EventFileWriter::write_event(std::string_view event) {
  if (!file_) fail<StateError>("EventFileWriter::write_event", "an open file", "'" + path_ + "' closed");
  const std::string rec = frame_record(event);
  if (std::fwrite(rec.data(), 1, rec.size(), file_) != rec.size())
    fail<IOError>("EventFileWriter", "a successful write", "'" + path_ + "': " + std::strerror(errno));
}

void EventFileWriter::flush() {
  if (file_ && std::fflush(file_) != 0)
    fail<IOError>("EventFileWriter::flush", "a successful flush", "'" + path_ + "': " + std::strerror(errno));
}

void EventFileWriter::close() {
  if (!file_) return;
  std::FILE* f = file_;
  file_ = nullptr;
  if (std::fclose(f) != 0)
    fail<IOError>("EventFileWriter::close", "a successful close", "'" + path_ + "': " + std::strerror(errno));
}

}  // namespace keras::callbacks::tfevents
