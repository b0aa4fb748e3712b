// Reads tests/data/keras/sequence_basics.json (made by make_sequence_basics_reference.py with real
// Keras 3): arrays as {"shape", "dtype", "data"} become Tensors; values and masks compare within
// 1e-5 relative.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "backend/tensor.h"

namespace keras::testing::sequence {

using json = nlohmann::json;

inline const json& reference(const std::string& file = "sequence_basics.json") {
  static std::map<std::string, json> loaded;
  auto it = loaded.find(file);
  if (it == loaded.end()) {
    std::ifstream in(std::string(KERAS_SOURCE_DIR) + "/tests/data/keras/" + file);
    it = loaded.emplace(file, in ? json::parse(in) : json()).first;
  }
  return it->second;
}

inline const json& reference_case(const std::string& name) { return reference().at("cases").at(name); }

inline Tensor tensor_of(const json& a) {
  Shape shape = a.at("shape").get<Shape>();
  const std::string dtype = a.at("dtype").get<std::string>();
  if (dtype == "int32") return Tensor::from_vector(a.at("data").get<std::vector<int32_t>>(), shape);
  if (dtype == "int64") return Tensor::from_vector(a.at("data").get<std::vector<int64_t>>(), shape);
  if (dtype == "bool") return Tensor::from_vector(a.at("data").get<std::vector<int32_t>>(), shape).astype(DType::boolean);
  return Tensor::from_vector(a.at("data").get<std::vector<float>>(), shape);
}

inline TensorList tensors_of(const json& list) {
  TensorList out;
  for (const auto& a : list) out.push_back(a.is_null() ? Tensor() : tensor_of(a));
  return out;
}

// Values of `ours` equal to the Keras array (NaN matches NaN), shapes equal.
inline void expect_matches(const Tensor& ours, const json& keras, const std::string& what) {
  ASSERT_TRUE(ours.defined()) << what << ": no tensor";
  Shape shape = keras.at("shape").get<Shape>();
  ASSERT_EQ(shape_str(ours.shape()), shape_str(shape)) << what;
  std::vector<double> a = ours.to_vector<double>();
  std::vector<double> b = keras.at("data").get<std::vector<double>>();
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(b[i])) {
      EXPECT_TRUE(std::isnan(a[i])) << what << " [" << i << "]";
      continue;
    }
    EXPECT_NEAR(a[i], b[i], 1e-5 + 1e-5 * std::abs(b[i])) << what << " [" << i << "]";
  }
}

// The mask attached to `ours` equals Keras's (null: none attached).
inline void expect_mask_matches(const Tensor& ours, const json& keras_mask, const std::string& what) {
  if (keras_mask.is_null()) {
    EXPECT_FALSE(ours.keras_mask().defined()) << what << ": Keras attaches no mask, got one of shape "
                                              << shape_str(ours.keras_mask().shape());
    return;
  }
  ASSERT_TRUE(ours.keras_mask().defined()) << what << ": Keras attaches a mask, got none";
  EXPECT_EQ(ours.keras_mask().dtype(), DType::boolean) << what;
  expect_matches(ours.keras_mask(), keras_mask, what + " mask");
}

}  // namespace keras::testing::sequence
