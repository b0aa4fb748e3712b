#include "keras/profiler/xplane_file.h"

#include <cstring>
#include <map>

namespace keras::profiler {
namespace {

// ---- protobuf wire format: varints (type 0), fixed 64-bit (type 1), length-delimited (type 2) ----

void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

void tag(std::string& out, int field, int wire_type) { varint(out, (static_cast<uint64_t>(field) << 3) | wire_type); }

void int_field(std::string& out, int field, int64_t v) {
  tag(out, field, 0);
  varint(out, static_cast<uint64_t>(v));  // int64: two's complement, as protobuf encodes negatives
}

void bytes_field(std::string& out, int field, const std::string& bytes) {
  tag(out, field, 2);
  varint(out, bytes.size());
  out += bytes;
}

void double_field(std::string& out, int field, double v) {
  tag(out, field, 1);
  char b[8];
  std::memcpy(b, &v, 8);  // little-endian hosts only, as the rest of the library
  out.append(b, 8);
}

// Field numbers of xplane.proto.
namespace xspace { constexpr int planes = 1, hostnames = 4; }
namespace xplane { constexpr int id = 1, name = 2, lines = 3, event_metadata = 4, stat_metadata = 5; }
namespace xline { constexpr int id = 1, name = 2, timestamp_ns = 3, events = 4, display_id = 10, display_name = 11; }
namespace xevent { constexpr int metadata_id = 1, offset_ps = 2, duration_ps = 3, stats = 4; }
namespace xstat { constexpr int metadata_id = 1, double_value = 2, int64_value = 4, str_value = 5; }
namespace xmeta { constexpr int id = 1, name = 2; }  // XEventMetadata and XStatMetadata alike

// Ids by name, from 1 (0 means "none" in XPlane).
class Names {
 public:
  int64_t id(const std::string& name) {
    auto [it, added] = ids_.try_emplace(name, static_cast<int64_t>(ids_.size()) + 1);
    return it->second;
  }
  // The map<int64, X*Metadata> entries of field `field`.
  void write(std::string& plane, int field) const {
    for (const auto& [name, id] : ids_) {
      std::string meta, entry;
      int_field(meta, xmeta::id, id);
      bytes_field(meta, xmeta::name, name);
      int_field(entry, 1, id);  // map key
      bytes_field(entry, 2, meta);  // map value
      bytes_field(plane, field, entry);
    }
  }

 private:
  std::map<std::string, int64_t> ids_;
};

class EventWriter {
 public:
  EventWriter(Names& stats) : stats_(stats) {}
  void str(const char* name, const std::string& v) {
    if (v.empty()) return;
    std::string s;
    int_field(s, xstat::metadata_id, stats_.id(name));
    bytes_field(s, xstat::str_value, v);
    bytes_field(out, xevent::stats, s);
  }
  void num(const char* name, int64_t v) {
    std::string s;
    int_field(s, xstat::metadata_id, stats_.id(name));
    int_field(s, xstat::int64_value, v);
    bytes_field(out, xevent::stats, s);
  }
  void real(const char* name, double v) {
    std::string s;
    int_field(s, xstat::metadata_id, stats_.id(name));
    double_field(s, xstat::double_value, v);
    bytes_field(out, xevent::stats, s);
  }
  std::string out;

 private:
  Names& stats_;
};

std::string shapes_str(const std::vector<Shape>& shapes) {
  std::string s;
  for (size_t i = 0; i < shapes.size(); ++i) s += (i ? ", " : "") + shape_str(shapes[i]);
  return s;
}

}  // namespace

std::string xspace_bytes(const Trace& trace) {
  Names event_names, stat_names;
  std::map<int64_t, std::string> lines;  // tid -> its events, encoded
  for (const Event& e : trace.events) {
    EventWriter w(stat_names);
    int_field(w.out, xevent::metadata_id, event_names.id(e.name));
    int_field(w.out, xevent::offset_ps, 1000 * (e.start_ns - trace.start_ns));
    int_field(w.out, xevent::duration_ps, 1000 * std::max<int64_t>(0, e.end_ns - e.start_ns));
    w.str("category", kind_name(e.kind));
    switch (e.kind) {
      case EventKind::op:
        w.str("layer", e.layer_path);
        w.str("phase", e.gradient ? "gradient" : "forward");
        w.str("forward_op", e.forward_op);
        w.str("input_shapes", shapes_str(e.input_shapes));
        w.str("dtype", e.dtype);
        w.num("bytes_allocated", e.bytes_allocated);
        if (e.flops > 0) w.real("flops", e.flops);
        break;
      case EventKind::layer:
        w.str("path", e.layer_path);
        w.str("class", e.layer_class);
        w.num("bytes_allocated", e.bytes_allocated);
        break;
      case EventKind::step:
        w.str("mode", e.mode);
        w.num("epoch", e.epoch);
        w.num("step", e.step);
        w.num("bytes_allocated", e.bytes_allocated);
        break;
      default: break;
    }
    bytes_field(lines[e.tid], xline::events, w.out);
  }
  std::string plane;
  int_field(plane, xplane::id, 0);
  bytes_field(plane, xplane::name, "/host:CPU");
  for (const auto& [tid, events] : lines) {
    std::string line;
    int_field(line, xline::id, tid);
    int_field(line, xline::display_id, tid);
    auto name = trace.thread_names.find(tid);
    const std::string thread = name != trace.thread_names.end() ? name->second : "thread " + std::to_string(tid);
    bytes_field(line, xline::name, thread);
    bytes_field(line, xline::display_name, thread);
    int_field(line, xline::timestamp_ns, trace.start_unix_ns);
    line += events;
    bytes_field(plane, xplane::lines, line);
  }
  event_names.write(plane, xplane::event_metadata);
  stat_names.write(plane, xplane::stat_metadata);
  std::string space;
  bytes_field(space, xspace::planes, plane);
  bytes_field(space, xspace::hostnames, trace.host);
  return space;
}

}  // namespace keras::profiler
