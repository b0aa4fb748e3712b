#include "callbacks/monitor.h"

#include <cmath>
#include <iostream>
#include <limits>

#include "keras/models/model.h"
#include "metrics/metric.h"

namespace keras::callbacks {

std::optional<Direction> resolve_direction(const std::string& where, const std::string& mode,
                                           const std::string& monitor, const Model* model) {
  if (mode == "min") return Direction::min;
  if (mode == "max") return Direction::max;
  if (mode != "auto") fail<ValueError>(where, "mode 'auto', 'min' or 'max'", "'" + mode + "'");
  std::string name = monitor.rfind("val_", 0) == 0 ? monitor.substr(4) : monitor;
  if (name == "loss") return Direction::min;
  if (model) {
    for (const auto& m : model->metrics()) {
      if (!m || m->name() != name) continue;
      std::string d = m->direction();
      if (d == "max" || d == "up") return Direction::max;
      if (d == "min" || d == "down") return Direction::min;
    }
  }
  return std::nullopt;
}

Direction legacy_direction(const std::string& monitor) {
  return monitor.find("acc") != std::string::npos || monitor.rfind("fmeasure", 0) == 0 ? Direction::max
                                                                                          : Direction::min;
}

bool is_improvement(Direction direction, double current, double reference, double min_delta) {
  return direction == Direction::min ? current + min_delta < reference : current - min_delta > reference;
}

double worst_value(Direction direction) {
  double inf = std::numeric_limits<double>::infinity();
  return direction == Direction::min ? inf : -inf;
}

void warn(const std::string& who, const std::string& message) {
  std::cerr << "WARNING: " << who << ": " << message << std::endl;
}

std::string key_list(const Logs& logs) {
  std::string out;
  for (const auto& [k, v] : logs.items()) out += (out.empty() ? "" : ", ") + k;
  return out;
}

bool all_finite(const Tensor& t) {
  if (!t.defined() || !is_floating(t.dtype())) return true;
  if (t.dtype() == DType::float64) {
    for (double v : t.to_vector<double>())
      if (!std::isfinite(v)) return false;
    return true;
  }
  for (float v : t.to_vector<float>())
    if (!std::isfinite(v)) return false;
  return true;
}

}  // namespace keras::callbacks
