// Reference values stored as JSON by the fixture generators under tests/data/keras/: a tensor is
// {"shape": [...], "dtype": "float32" | "bool" | ..., "data": [flat values]}.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "backend/ops.h"

namespace keras::testing {

inline nlohmann::json load_json_reference(const std::string& name) {
  const std::string path = std::string(KERAS_SOURCE_DIR) + "/tests/data/keras/" + name;
  std::ifstream in(path);
  if (!in) ADD_FAILURE() << "missing fixture " << path;
  return in ? nlohmann::json::parse(in) : nlohmann::json::object();
}

inline Tensor tensor_from_json(const nlohmann::json& j) {
  Shape shape = j.at("shape").get<Shape>();
  std::vector<double> values;
  for (const auto& v : j.at("data")) values.push_back(v.is_boolean() ? (v.get<bool>() ? 1.0 : 0.0) : v.get<double>());
  Tensor t = Tensor::from_vector(values, shape);
  const std::string dtype = j.at("dtype").get<std::string>();
  if (dtype == "bool") return ops::greater(t, Tensor::scalar(0.5, DType::float64));
  return ops::cast(t, dtype == "float64" ? DType::float64 : DType::float32);
}

// Max |a - b| / (1 + |b|) over all elements; shapes must agree (a gtest failure otherwise).
inline double max_relative_error(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(shape_str(a.shape()), shape_str(b.shape()));
  if (a.shape() != b.shape()) return INFINITY;
  std::vector<double> x = ops::cast(a, DType::float64).to_vector<double>();
  std::vector<double> y = ops::cast(b, DType::float64).to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - y[i]) / (1.0 + std::abs(y[i])));
  return worst;
}

}  // namespace keras::testing
