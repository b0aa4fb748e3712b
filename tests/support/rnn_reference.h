// Reading tests/data/keras/rnn_layers_reference.json (make_rnn_layers_reference.py): tensors as
// {"shape", "values"}, the cases by name, and Keras-config comparison that ignores only what
// Keras adds per process (shared_object_id) and the DTypePolicy/plain-name form of dtype.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "backend/ops.h"
#include "backend/tensor.h"

namespace keras::testing {

inline const nlohmann::json& rnn_reference() {
  static const nlohmann::json doc = [] {
    std::ifstream in(std::string(KERAS_SOURCE_DIR) + "/tests/data/keras/rnn_layers_reference.json");
    if (!in) throw std::runtime_error("missing tests/data/keras/rnn_layers_reference.json");
    return nlohmann::json::parse(in);
  }();
  return doc;
}

inline const nlohmann::json& rnn_case(const std::string& name) {
  for (const auto& c : rnn_reference()["cases"])
    if (c["name"] == name) return c;
  throw std::runtime_error("no reference case " + name);
}

inline Tensor tensor_of(const nlohmann::json& j) {
  return Tensor::from_vector(j["values"].get<std::vector<float>>(), j["shape"].get<Shape>());
}

// A 0/1 reference mask as a boolean tensor.
inline Tensor bool_mask_of(const nlohmann::json& j) {
  Tensor m = tensor_of(j);
  return ops::greater(m, Tensor::zeros(m.shape()));
}

// |a - e| <= atol + rtol * |e| everywhere, shapes equal.
inline void expect_close(const Tensor& actual, const Tensor& expected, const std::string& what, double tol = 1e-5) {
  ASSERT_EQ(shape_str(actual.shape()), shape_str(expected.shape())) << what;
  Tensor a = actual.contiguous(), e = expected.contiguous();
  const float* pa = a.data<float>();
  const float* pe = e.data<float>();
  int64_t bad = 0;
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double d = std::abs(static_cast<double>(pa[i]) - pe[i]);
    if (d > tol + tol * std::abs(pe[i])) ++bad;
    worst = std::max(worst, d);
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << a.numel() << " values differ, worst by " << worst;
}

// Keras configs compared as values: dtype policies become their name, shared_object_id goes.
inline nlohmann::json normalized_config(const nlohmann::json& j) {
  if (j.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& v : j) out.push_back(normalized_config(v));
    return out;
  }
  if (!j.is_object()) return j;
  if (j.value("class_name", "") == "DTypePolicy" && j.contains("config")) return j["config"]["name"];
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [k, v] : j.items())
    if (k != "shared_object_id") out[k] = normalized_config(v);
  return out;
}

}  // namespace keras::testing
