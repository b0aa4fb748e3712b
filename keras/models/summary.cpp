// Model::summary: the Keras 3 table of layers, output shapes and parameter counts.
#include <cstdio>
#include <set>
#include <sstream>

#include "keras/models/model.h"

namespace keras {

namespace {
std::string with_commas(int64_t v) {
  std::string s = std::to_string(v), out;
  int count = 0;
  for (auto it = s.rbegin(); it != s.rend(); ++it) {
    if (count && count % 3 == 0) out.insert(out.begin(), ',');
    out.insert(out.begin(), *it);
    ++count;
  }
  return out;
}

std::string human_bytes(int64_t params) {
  double bytes = static_cast<double>(params) * 4;  // float32
  const char* units[] = {"B", "KB", "MB", "GB"};
  int u = 0;
  while (bytes >= 1024 && u < 3) bytes /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f %s", bytes, units[u]);
  return buf;
}

// Display width of UTF-8 text (box-drawing characters count as one column).
size_t columns(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string cell(const std::string& text, size_t width, bool right) {
  std::string t = text;
  if (columns(t) > width) t = t.substr(0, width - 1) + "…";
  std::string pad(width > columns(t) ? width - columns(t) : 0, ' ');
  return right ? pad + t : t + pad;
}

std::string rule(const char* left, const char* fill, const char* mid, const char* right, const std::vector<size_t>& w) {
  std::string s = left;
  for (size_t i = 0; i < w.size(); ++i) {
    for (size_t k = 0; k < w[i] + 2; ++k) s += fill;
    s += i + 1 < w.size() ? mid : right;
  }
  return s;
}
}  // namespace

void Model::summary(std::ostream& os) const {
  os << "Model: \"" << name() << "\"\n";
  std::vector<std::array<std::string, 3>> rows;
  for (const auto& layer : layers()) {
    if (class_name() == "Sequential" && layer->class_name() == "InputLayer") continue;
    std::string shape = "?";
    // The output of this layer's call inside this model (the last recorded node still held).
    const auto nodes = layer->inbound_nodes();
    for (auto n = nodes.rbegin(); n != nodes.rend(); ++n)
      if (*n) {
        if (!(*n)->outputs.empty()) shape = shape_str((*n)->outputs[0].shape);
        break;
      }
    rows.push_back({layer->name() + " (" + layer->class_name() + ")", shape, with_commas(layer->count_params())});
  }
  std::vector<size_t> w = {31, 22, 13};
  for (const auto& r : rows)
    for (size_t i = 0; i < 3; ++i) w[i] = std::max(w[i], columns(r[i]));
  os << rule("┏", "━", "┳", "┓", w) << "\n";
  os << "┃ " << cell("Layer (type)", w[0], false) << " ┃ " << cell("Output Shape", w[1], false) << " ┃ "
     << cell("Param #", w[2], true) << " ┃\n";
  os << rule("┡", "━", "╇", "┩", w) << "\n";
  for (size_t r = 0; r < rows.size(); ++r) {
    os << "│ " << cell(rows[r][0], w[0], false) << " │ " << cell(rows[r][1], w[1], false) << " │ "
       << cell(rows[r][2], w[2], true) << " │\n";
    if (r + 1 < rows.size()) os << rule("├", "─", "┼", "┤", w) << "\n";
  }
  os << rule("└", "─", "┴", "┘", w) << "\n";
  int64_t trainable = 0, frozen = 0;
  for (const auto& v : trainable_weights()) trainable += shape_numel(v.shape());
  for (const auto& v : non_trainable_weights()) frozen += shape_numel(v.shape());
  os << " Total params: " << with_commas(trainable + frozen) << " (" << human_bytes(trainable + frozen) << ")\n";
  os << " Trainable params: " << with_commas(trainable) << " (" << human_bytes(trainable) << ")\n";
  os << " Non-trainable params: " << with_commas(frozen) << " (" << human_bytes(frozen) << ")\n";
}

}  // namespace keras
