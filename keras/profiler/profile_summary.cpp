#include "keras/profiler/profile_summary.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>

#include "keras/profiler/memory_info.h"

namespace keras::profiler {
namespace {

constexpr const char* kOutside = "(outside layers)";

std::string fixed(double v, int decimals) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// "15.9 G", "3.20 M": three significant digits with an SI prefix.
std::string rate(double flops_per_second) {
  if (flops_per_second <= 0) return "-";
  const char* prefix[] = {"", " k", " M", " G", " T"};
  int p = 0;
  while (flops_per_second >= 1000 && p < 4) flops_per_second /= 1000, ++p;
  return fixed(flops_per_second, flops_per_second >= 100 ? 0 : flops_per_second >= 10 ? 1 : 2) + prefix[p];
}

// Display width of UTF-8 text.
size_t columns(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string cell(const std::string& text, size_t width, bool right) {
  std::string pad(width > columns(text) ? width - columns(text) : 0, ' ');
  return right ? pad + text : text + pad;
}

std::string rule(const char* left, const char* fill, const char* mid, const char* right, const std::vector<size_t>& w) {
  std::string s = left;
  for (size_t i = 0; i < w.size(); ++i) {
    for (size_t k = 0; k < w[i] + 2; ++k) s += fill;
    s += i + 1 < w.size() ? mid : right;
  }
  return s;
}

double seconds(const Event& e) { return 1e-9 * static_cast<double>(e.end_ns - e.start_ns); }

}  // namespace

std::vector<LayerProfile> layer_profile(const Trace& trace) {
  std::map<std::string, LayerProfile> rows;
  std::vector<std::string> order;  // first seen
  auto row = [&](const std::string& path) -> LayerProfile& {
    const std::string key = path.empty() ? kOutside : path;
    auto [it, added] = rows.try_emplace(key);
    if (added) {
      it->second.path = key;
      order.push_back(key);
    }
    return it->second;
  };
  for (const Event& e : trace.events) {
    if (e.kind == EventKind::layer) {
      LayerProfile& r = row(e.layer_path);
      r.class_name = e.layer_class;
      ++r.calls;
    } else if (e.kind == EventKind::op) {
      LayerProfile& r = row(e.layer_path);
      ++r.ops;
      (e.gradient ? r.backward_seconds : r.forward_seconds) += seconds(e);
      if (e.flops > 0) r.flops += e.flops, r.flops_seconds += seconds(e);
    }
  }
  std::vector<LayerProfile> out;
  for (const auto& key : order) out.push_back(rows[key]);
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.seconds() > b.seconds(); });
  return out;
}

std::string summary(const Trace& trace, size_t max_rows) {
  std::vector<LayerProfile> layers = layer_profile(trace);
  double total = 0;
  for (const auto& l : layers) total += l.seconds();
  std::string os = "Profile: " + std::to_string(trace.events.size()) + " events over " +
                   fixed(1e-6 * static_cast<double>(trace.end_ns - trace.start_ns), 2) + " ms" +
                   (trace.path.empty() ? "" : " (" + trace.path + ")") + "\n";
  const std::array<const char*, 8> head = {"Layer", "Class", "Calls", "Forward ms", "Backward ms", "Total ms", "Share",
                                           "FLOP/s"};
  const std::array<bool, 8> right = {false, false, true, true, true, true, true, true};
  std::vector<std::array<std::string, 8>> rows;
  const size_t shown = max_rows > 0 ? std::min(max_rows, layers.size()) : layers.size();
  for (size_t i = 0; i < shown; ++i) {
    const LayerProfile& l = layers[i];
    rows.push_back({l.path, l.class_name, std::to_string(l.calls), fixed(1e3 * l.forward_seconds, 3),
                    fixed(1e3 * l.backward_seconds, 3), fixed(1e3 * l.seconds(), 3),
                    fixed(total > 0 ? 100 * l.seconds() / total : 0, 1) + "%", rate(l.flops_per_second())});
  }
  std::vector<size_t> w(head.size());
  for (size_t c = 0; c < head.size(); ++c) {
    w[c] = columns(head[c]);
    for (const auto& r : rows) w[c] = std::max(w[c], columns(r[c]));
  }
  auto line = [&](const std::array<std::string, 8>& r, const char* bar) {
    std::string s = bar;
    for (size_t c = 0; c < r.size(); ++c) s += " " + cell(r[c], w[c], right[c]) + " " + bar;
    return s + "\n";
  };
  os += rule("┏", "━", "┳", "┓", w) + "\n";
  std::array<std::string, 8> h;
  for (size_t c = 0; c < head.size(); ++c) h[c] = head[c];
  os += line(h, "┃");
  os += rule("┡", "━", "╇", "┩", w) + "\n";
  for (size_t r = 0; r < rows.size(); ++r) {
    os += line(rows[r], "│");
    if (r + 1 < rows.size()) os += rule("├", "─", "┼", "┤", w) + "\n";
  }
  os += rule("└", "─", "┴", "┘", w) + "\n";
  if (shown < layers.size()) os += " (" + std::to_string(layers.size() - shown) + " more layers)\n";

  // Footer: where the rest of the steps' time went.
  std::map<std::string, std::pair<int64_t, double>> steps;  // mode -> (count, seconds)
  double data = 0, callbacks = 0;
  int64_t data_n = 0, callback_n = 0;
  std::map<std::string, double> phases;
  for (const Event& e : trace.events) {
    if (e.kind == EventKind::step) ++steps[e.mode].first, steps[e.mode].second += seconds(e);
    if (e.kind == EventKind::data_wait) ++data_n, data += seconds(e);
    if (e.kind == EventKind::callback) ++callback_n, callbacks += seconds(e);
    if (e.kind == EventKind::phase) phases[e.name] += seconds(e);
  }
  os += " Op time: " + fixed(1e3 * total, 3) + " ms in " + std::to_string(layers.size()) + " layers\n";
  for (const auto& [mode, s] : steps)
    os += " Steps (" + mode + "): " + std::to_string(s.first) + ", mean " + fixed(1e3 * s.second / double(s.first), 3) +
          " ms\n";
  if (!phases.empty()) {
    os += " Train step phases:";
    for (const auto& [name, s] : phases) os += " " + name + " " + fixed(1e3 * s, 3) + " ms;";
    os.back() = '\n';
  }
  os += " Data waits: " + std::to_string(data_n) + ", " + fixed(1e3 * data, 3) + " ms; callbacks: " +
        std::to_string(callback_n) + " hooks, " + fixed(1e3 * callbacks, 3) + " ms\n";
  std::map<std::string, size_t> peaks;
  for (const MemorySample& m : trace.memory) peaks[m.device.str()] = std::max(peaks[m.device.str()], m.peak_bytes);
  for (const auto& [device, peak] : peaks)
    os += " Peak memory (" + device + "): " + debugging::human_bytes(static_cast<double>(peak)) + "\n";
  return os;
}

std::string summary(size_t max_rows) { return summary(last_trace(), max_rows); }

void print_summary(std::ostream& os, size_t max_rows) { os << summary(max_rows); }

}  // namespace keras::profiler
