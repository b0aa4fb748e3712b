// Models and helpers shared by the weight-file tests (test_weights_h5, test_legacy_weights):
// an MLP, a CNN with BatchNormalization, and a functional model holding a nested model with a
// frozen layer; random weights; bit-exact snapshots.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "keras/keras.h"

namespace weights_test {

namespace L = keras::layers;
using keras::Model;
using keras::Sequential;
using keras::Tensor;

inline std::shared_ptr<Sequential> mlp(const std::string& name = "mlp") {
  return std::make_shared<Sequential>(
      std::vector<keras::LayerPtr>{L::InputLayer({.shape = {4}}), L::Dense({.units = 8, .activation = "relu"}),
                                   L::Dense({.units = 3})},
      name);
}

inline std::shared_ptr<Sequential> cnn(const std::string& name = "cnn") {
  return std::make_shared<Sequential>(
      std::vector<keras::LayerPtr>{L::InputLayer({.shape = {8, 8, 3}}), L::Conv2D({.filters = 4, .kernel_size = 3}),
                                   L::BatchNormalization(), L::MaxPooling2D({.pool_size = 2}), L::Flatten(),
                                   L::Dense({.units = 2})},
      name);
}

// input -> inner [Dense(3) frozen, BatchNormalization, Dense(2)] -> Dense "head"(2).
inline std::shared_ptr<Model> nested(const std::string& name = "outer") {
  auto inner = std::make_shared<Sequential>(
      std::vector<keras::LayerPtr>{L::InputLayer({.shape = {4}}), L::Dense({.units = 3}), L::BatchNormalization(),
                                   L::Dense({.units = 2})},
      "inner");
  inner->layers()[0]->set_trainable(false);
  auto x = L::Input({4});
  auto y = L::Dense({.units = 2, .name = "head"})((*inner)(x));
  return std::make_shared<Model>(x, y, name);
}

// Distinct random values in every weight (BatchNormalization's moving statistics included;
// variances kept positive so that predictions stay finite).
inline void randomize(const keras::Layer& model, uint64_t seed) {
  auto ws = model.weights();
  for (size_t i = 0; i < ws.size(); ++i) {
    std::vector<float> v = keras::random::normal(ws[i].shape(), 0, 1, seed * 1000 + i).to_vector<float>();
    if (ws[i].name() == "moving_variance")
      for (auto& e : v) e = 0.5f + std::abs(e);
    ws[i].assign(Tensor::from_vector(v, ws[i].shape()));
  }
}

inline std::vector<std::string> snapshot(const keras::Layer& model) {
  std::vector<std::string> out;
  for (const auto& v : model.weights()) {
    Tensor t = v.value().contiguous();
    out.emplace_back(static_cast<const char*>(t.raw_data()), t.nbytes());
  }
  return out;
}

inline std::vector<std::string> snapshot(const std::vector<keras::Variable>& vars) {
  std::vector<std::string> out;
  for (const auto& v : vars) {
    Tensor t = v.value().contiguous();
    out.emplace_back(static_cast<const char*>(t.raw_data()), t.nbytes());
  }
  return out;
}

template <class E, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "<no error of the expected type>";
}

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

inline std::filesystem::path temp_dir(const std::string& tag) {
  auto dir = std::filesystem::temp_directory_path() / ("keras_" + tag + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace weights_test
