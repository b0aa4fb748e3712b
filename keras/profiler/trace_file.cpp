#include "keras/profiler/trace_file.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <numeric>

#include "backend/errors.h"
#include "keras/profiler/xplane_file.h"
#include "keras/utils/file_util.h"

namespace keras::profiler {
namespace {

void append_escaped(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

// Nanoseconds as microseconds with three decimals, exactly (no floating-point rounding), so that
// an event nested in another stays inside it in the file.
void append_us(std::string& out, int64_t ns) {
  char buf[40];
  const char* sign = ns < 0 ? "-" : "";
  const int64_t a = ns < 0 ? -ns : ns;
  std::snprintf(buf, sizeof buf, "%s%" PRId64 ".%03" PRId64, sign, a / 1000, a % 1000);
  out += buf;
}

std::string shapes_str(const std::vector<Shape>& shapes) {
  std::string s;
  for (size_t i = 0; i < shapes.size(); ++i) s += (i ? ", " : "") + shape_str(shapes[i]);
  return s;
}

// Args of one complete event; `first` tracks the comma.
struct Args {
  std::string& out;
  bool first = true;
  void key(const char* k) {
    out += first ? "" : ",";
    first = false;
    append_escaped(out, k);
    out += ':';
  }
  void str(const char* k, const std::string& v) { key(k), append_escaped(out, v); }
  void num(const char* k, int64_t v) { key(k), out += std::to_string(v); }
  void real(const char* k, double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    key(k), out += buf;
  }
};

void append_event(std::string& out, const Event& e, int64_t origin, int pid) {
  out += "{\"ph\":\"X\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(e.tid) + ",\"ts\":";
  append_us(out, e.start_ns - origin);
  out += ",\"dur\":";
  append_us(out, std::max<int64_t>(0, e.end_ns - e.start_ns));
  out += ",\"name\":";
  append_escaped(out, e.name);
  out += ",\"cat\":";
  append_escaped(out, e.kind == EventKind::op && e.gradient ? "op,gradient" : kind_name(e.kind));
  out += ",\"args\":{";
  Args a{out};
  switch (e.kind) {
    case EventKind::op:
      a.str("layer", e.layer_path);
      a.str("phase", e.gradient ? "gradient" : "forward");
      if (e.gradient && !e.forward_op.empty()) a.str("forward_op", e.forward_op);
      a.str("input_shapes", shapes_str(e.input_shapes));
      if (!e.dtype.empty()) a.str("dtype", e.dtype);
      a.num("bytes_allocated", e.bytes_allocated);
      if (e.flops > 0) a.real("flops", e.flops);
      break;
    case EventKind::layer:
      a.str("path", e.layer_path);
      a.str("class", e.layer_class);
      a.num("bytes_allocated", e.bytes_allocated);
      break;
    case EventKind::step:
      a.str("mode", e.mode);
      if (e.epoch >= 0) a.num("epoch", e.epoch);
      a.num("step", e.step);
      a.num("bytes_allocated", e.bytes_allocated);
      if (e.truncated) a.str("truncated", "still running at profiler::stop()");
      break;
    default: break;
  }
  out += "}}";
}

void append_counter(std::string& out, const MemorySample& m, int64_t origin, int pid) {
  out += "{\"ph\":\"C\",\"pid\":" + std::to_string(pid) + ",\"tid\":0,\"ts\":";
  append_us(out, m.time_ns - origin);
  out += ",\"name\":";
  append_escaped(out, "memory " + m.device.str());
  out += ",\"args\":{";
  Args a{out};
  a.num("current_bytes", static_cast<int64_t>(m.current_bytes));
  a.num("peak_bytes", static_cast<int64_t>(m.peak_bytes));
  a.num("cached_bytes", static_cast<int64_t>(m.cached_bytes));
  out += "}}";
}

void append_metadata(std::string& out, const char* name, int pid, int64_t tid, const std::string& value) {
  out += "{\"ph\":\"M\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) + ",\"name\":\"" + name +
         "\",\"args\":{\"name\":";
  append_escaped(out, value);
  out += "}}";
}

}  // namespace

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || !buf[0]) return "localhost";
  return buf;
}

std::string run_name_now() {
  std::time_t t = std::time(nullptr);
  std::tm local{};
  localtime_r(&t, &local);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y_%m_%d_%H_%M_%S", &local);
  return buf;
}

std::string trace_json(const Trace& trace) {
  const int pid = static_cast<int>(getpid());
  const int64_t origin = trace.start_ns;
  // Parents before children: by thread, then start, then the longer first.
  std::vector<size_t> order(trace.events.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t i, size_t j) {
    const Event &a = trace.events[i], &b = trace.events[j];
    if (a.tid != b.tid) return a.tid < b.tid;
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    return a.end_ns > b.end_ns;
  });
  std::string out;
  out.reserve(256 * (trace.events.size() + 8));
  out += "{\"displayTimeUnit\":\"ns\",\"otherData\":{";
  Args meta{out};
  meta.str("framework", "keras-cpp");
  meta.str("host", trace.host);
  meta.str("run", trace.run);
  meta.num("duration_ns", trace.end_ns - trace.start_ns);
  out += "},\"traceEvents\":[";
  append_metadata(out, "process_name", pid, 0, "keras (" + trace.host + ")");
  for (const auto& [tid, name] : trace.thread_names) {
    out += ',';
    append_metadata(out, "thread_name", pid, tid, name);
  }
  for (size_t i : order) {
    out += ",\n";
    append_event(out, trace.events[i], origin, pid);
  }
  for (const MemorySample& m : trace.memory) {
    out += ",\n";
    append_counter(out, m, origin, pid);
  }
  out += "]}\n";
  return out;
}

std::string gzip_compress(const std::string& bytes) {
  z_stream s{};
  // 15 + 16: a gzip header and trailer around the deflate stream.
  if (deflateInit2(&s, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    fail<IOError>("profiler trace", "zlib to initialise", "a deflateInit2 failure");
  std::string out;
  std::string chunk(1 << 16, '\0');
  size_t pos = 0;
  int rc = Z_OK;
  do {
    if (s.avail_in == 0 && pos < bytes.size()) {
      const size_t n = std::min<size_t>(bytes.size() - pos, size_t{1} << 30);
      s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data() + pos));
      s.avail_in = static_cast<uInt>(n);
      pos += n;
    }
    s.next_out = reinterpret_cast<Bytef*>(chunk.data());
    s.avail_out = static_cast<uInt>(chunk.size());
    rc = deflate(&s, pos == bytes.size() ? Z_FINISH : Z_NO_FLUSH);
    out.append(chunk.data(), chunk.size() - s.avail_out);
  } while (rc != Z_STREAM_END && rc != Z_STREAM_ERROR);
  deflateEnd(&s);
  if (rc != Z_STREAM_END) fail<IOError>("profiler trace", "gzip to finish", "a zlib stream error");
  return out;
}

std::string write_trace(const Trace& trace) {
  namespace fs = std::filesystem;
  const fs::path profiles = fs::path(trace.logdir) / "plugins" / "profile";
  fs::path dir = profiles / trace.run;
  std::error_code ec;
  for (int n = 2; fs::exists(dir, ec); ++n) dir = profiles / (trace.run + "_" + std::to_string(n));
  fs::create_directories(dir, ec);
  if (ec)
    fail<IOError>("profiler::stop", "a writable directory " + dir.string(), ec.message(),
                  "Check the logdir passed to profiler::start.");
  const fs::path file = dir / (trace.host + ".trace.json.gz");
  write_file_atomic(file.string(), gzip_compress(trace_json(trace)));
  write_file_atomic((dir / (trace.host + ".xplane.pb")).string(), xspace_bytes(trace));
  return file.string();
}

}  // namespace keras::profiler
