// TensorBoard event files written by hand (keras-formats.md section 7): TFRecord framing with
// masked CRC-32C and a tiny protobuf wire encoder for Event / Summary / Value / TensorProto /
// SummaryMetadata / HistogramProto. No protobuf or TensorFlow dependency; the files read in the
// real TensorBoard (tests/callbacks/test_tensorboard.cpp checks that with its event reader).
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace keras::callbacks::tfevents {

// ---- checksums and framing ----
// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78, init and xorout 0xFFFFFFFF):
// crc32c("123456789") == 0xE3069283.
uint32_t crc32c(std::string_view data);
// TFRecord's mask: rotate right by 15, plus 0xA282EAD8 (mod 2^32).
uint32_t masked_crc32c(std::string_view data);
// One TFRecord: u64 length, u32 masked crc(length bytes), data, u32 masked crc(data); little-endian.
std::string frame_record(std::string_view data);

// ---- histograms ----
// A legacy HistogramProto. Bucket i counts the values in [bucket_limit[i-1], bucket_limit[i]);
// the first bucket starts at min and the last ends at max (TensorBoard's reading).
struct Histogram {
  double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
  std::vector<double> bucket_limit;
  std::vector<double> bucket;
};
// 30 equal-width buckets over [min, max] (the bucket count of tf.summary.histogram), the maximum
// counted in the last bucket; a single bucket when all values are equal; no bucket when empty.
// Non-finite values are left out of the buckets and the moments (they would poison every bucket).
Histogram make_histogram(const std::vector<double>& values, int bucket_count = 30);

// ---- events (serialised Event messages, unframed) ----
// Event{wall_time, file_version}: the first record of every file ("brain.Event:2").
std::string encode_file_version_event(double wall_time, std::string_view file_version = "brain.Event:2");
// Scalar in the legacy form: Value{tag, simple_value}. step 0 is omitted (proto3 default).
std::string encode_simple_scalar_event(double wall_time, int64_t step, std::string_view tag, float value);
// Scalar in the TF2 form: Value{tag, tensor = DT_FLOAT scalar in float_val, metadata}; the
// metadata ({plugin_name "scalars", data_class SCALAR}) only when `with_metadata`, since
// TensorBoard needs it on the first value of a tag only.
std::string encode_tensor_scalar_event(double wall_time, int64_t step, std::string_view tag, float value,
                                       bool with_metadata);
// Histogram as a legacy Value{tag, histo}; TensorBoard migrates it to its histograms plugin.
std::string encode_histogram_event(double wall_time, int64_t step, std::string_view tag, const Histogram& histo);

// Seconds since the Unix epoch, with sub-second precision (an Event's wall_time).
double unix_time_now();

// ---- a file ----
// Writes one event file `<dir>/events.out.tfevents.<secs>.<hostname>.<pid>.<counter>.v2`
// (creating `dir`), starting with the file_version record. Not thread-safe. Throws IOError
// naming the path when the directory or file cannot be created or a write fails.
class EventFileWriter {
 public:
  explicit EventFileWriter(const std::string& dir);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  const std::string& path() const { return path_; }
  // A TF2 scalar; the plugin metadata goes with the first value of each tag.
  void add_scalar(const std::string& tag, double value, int64_t step);
  void add_histogram(const std::string& tag, const std::vector<double>& values, int64_t step);
  // Appends an already-serialised Event (framed here).
  void write_event(std::string_view event);
  void flush();
  void close();  // idempotent; the destructor calls it

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  std::unordered_set<std::string> tags_with_metadata_;
};

}  // namespace keras::callbacks::tfevents
