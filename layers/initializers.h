// Keras initializers (keras.initializers): VarianceScaling and its Glorot/He/Lecun presets,
// constants, random distributions and Orthogonal, plus lookup by Keras name or config.
//
// Seeds follow Keras 3: a seeded initializer returns identical values on every call; an unseeded
// one draws a fresh stream from keras::global_generator(), so keras::set_random_seed reproduces
// a whole model's initial weights.
#pragma once
#include <concepts>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backend/random.h"
#include "layers/initializer.h"

namespace keras::initializers {

using Seed = std::optional<int64_t>;

// Axes of a weight that Keras 3.15's input_axes / output_axes name (negative: from the end);
// nullopt is Keras's None.
using Axes = std::optional<std::vector<int64_t>>;

// (fan_in, fan_out) as Keras computes them: with both axis lists given, the products of the
// extents along each (ValueError naming an axis outside the shape); otherwise rank 0 -> (1, 1);
// rank 1 -> (n, n); rank 2 -> (in, out); rank >= 3 (conv kernels) -> receptive field * (in
// channels, out channels).
std::pair<double, double> compute_fans(const Shape& shape, const Axes& input_axes = std::nullopt,
                                       const Axes& output_axes = std::nullopt);

// Base of the random initializers: owns the seed.
class RandomInitializer : public Initializer {
 public:
  explicit RandomInitializer(Seed seed) : seed_(seed) {}
  const Seed& seed() const { return seed_; }

 protected:
  // The stream for one call: Generator(seed) when seeded, else a fresh one from the global stream.
  Generator generator() const;
  json seed_json() const { return seed_ ? json(*seed_) : json(nullptr); }

 private:
  Seed seed_;
};

// Samples with variance scale / n, n = fan_in, fan_out or their mean (`mode`). `distribution`:
// "truncated_normal" (alias "normal"; stddev corrected for the truncation at 2 sigma),
// "untruncated_normal" or "uniform" (limit sqrt(3 scale / n)). `input_axes` / `output_axes`
// choose the fans' axes (compute_fans). ValueError for a bad scale, mode or distribution.
class VarianceScaling : public RandomInitializer {
 public:
  explicit VarianceScaling(double scale = 1.0, std::string mode = "fan_in",
                           std::string distribution = "truncated_normal", Seed seed = std::nullopt,
                           Axes input_axes = std::nullopt, Axes output_axes = std::nullopt);
  Tensor operator()(const Shape& shape, DType dtype = DType::float32) const override;
  std::string class_name() const override { return "VarianceScaling"; }
  json get_config() const override;
  double scale() const { return scale_; }
  const std::string& mode() const { return mode_; }
  const std::string& distribution() const { return distribution_; }
  const Axes& input_axes() const { return input_axes_; }
  const Axes& output_axes() const { return output_axes_; }

 protected:
  json axes_config() const;  // {"input_axes", "output_axes"}

 private:
  double scale_;
  std::string mode_, distribution_;
  Axes input_axes_, output_axes_;
};

// The presets keep Keras's class names and their {"seed", "input_axes", "output_axes"} config.
#define KERAS_VARIANCE_PRESET(Name, scale, mode, distribution)                                        \
  class Name : public VarianceScaling {                                                             \
   public:                                                                                          \
    explicit Name(Seed seed = std::nullopt, Axes input_axes = std::nullopt, Axes output_axes = std::nullopt) \
        : VarianceScaling(scale, mode, distribution, seed, std::move(input_axes), std::move(output_axes)) {}  \
    std::string class_name() const override { return #Name; }                                       \
    json get_config() const override {                                                              \
      json c = axes_config();                                                                       \
      c["seed"] = seed_json();                                                                      \
      return c;                                                                                     \
    }                                                                                               \
  }
KERAS_VARIANCE_PRESET(GlorotUniform, 1.0, "fan_avg", "uniform");
KERAS_VARIANCE_PRESET(GlorotNormal, 1.0, "fan_avg", "truncated_normal");
KERAS_VARIANCE_PRESET(HeUniform, 2.0, "fan_in", "uniform");
KERAS_VARIANCE_PRESET(HeNormal, 2.0, "fan_in", "truncated_normal");
KERAS_VARIANCE_PRESET(LecunUniform, 1.0, "fan_in", "uniform");
KERAS_VARIANCE_PRESET(LecunNormal, 1.0, "fan_in", "truncated_normal");
#undef KERAS_VARIANCE_PRESET

class Zeros : public Initializer {
 public:
  Tensor operator()(const Shape& shape, DType dtype = DType::float32) const override;
  std::string class_name() const override { return "Zeros"; }
};

class Ones : public Initializer {
 public:
  Tensor operator()(const Shape& shape, DType dtype = DType::float32) const override;
  std::string class_name() const override { return "Ones"; }
};

class Constant : public Initializer {
 public:
  explicit Constant(double value = 0.0) : value_(value) {}
  Tensor operator()(const Shape& shape, DType dtype = DType::float32) const override;
  std::string class_name() const override { return "Constant"; }
  json get_config() const override { return {{"value", value_}}; }

 private:
  double value_;
};

class RandomNormal : public RandomInitializer {
 public:
  explicit RandomNormal(double mean = 0.0, double stddev = 0.05, Seed seed = std::nullopt);
  Tensor operator()(const Shape& shape, DType dtype = DType::float32) const override;
  std::string class_name() const override { return "RandomNormal"; }
  json get_config() const override { return {{"mean", mean_}, {"stddev", stddev_}, {"seed", seed_json()}}; }

 private:
  double mean_, stddev_;
};

// Normal redrawn outside mean +- 2 stddev (stddev is that of the untruncated normal, as Keras).
class TruncatedNormal : public RandomInitializer {
 public:
  explicit TruncatedNormal(double mean = 0.0, double stddev = 0.05, Seed seed = std::nullopt);
  Tensor operator()(const Shape& shape, DType dtype = DType::float32) const override;
  std::string class_name() const override { return "TruncatedNormal"; }
  json get_config() const override { return {{"mean", mean_}, {"stddev", stddev_}, {"seed", seed_json()}}; }

 private:
  double mean_, stddev_;
};

class RandomUniform : public RandomInitializer {
 public:
  explicit RandomUniform(double minval = -0.05, double maxval = 0.05, Seed seed = std::nullopt);
  Tensor operator()(const Shape& shape, DType dtype = DType::float32) const override;
  std::string class_name() const override { return "RandomUniform"; }
  json get_config() const override { return {{"minval", minval_}, {"maxval", maxval_}, {"seed", seed_json()}}; }

 private:
  double minval_, maxval_;
};

// gain * Q of the QR of a normal matrix (rows = prod(shape[:-1]), cols = shape[-1]), with Q's
// columns sign-corrected so diag(R) > 0 (unique, as Keras); transposed when rows < cols.
// ValueError for rank < 2.
class Orthogonal : public RandomInitializer {
 public:
  explicit Orthogonal(double gain = 1.0, Seed seed = std::nullopt) : RandomInitializer(seed), gain_(gain) {}
  Tensor operator()(const Shape& shape, DType dtype = DType::float32) const override;
  std::string class_name() const override { return "Orthogonal"; }
  json get_config() const override { return {{"gain", gain_}, {"seed", seed_json()}}; }

 private:
  double gain_;
};

// ---- lookup and serialization ----
using InitializerFactory = std::function<InitializerPtr(const json& config)>;
// Registers a class (custom initializers too) under `name`; later registrations replace.
void register_initializer(const std::string& name, InitializerFactory factory);
// By Keras name: snake names ("glorot_uniform", "he_normal", "zeros", "uniform", ...) and class
// names ("GlorotUniform"). ValueError listing the known names otherwise.
InitializerPtr get(const std::string& name);
// From a config: a bare string, Keras 2 {"class_name","config"} or a Keras 3 object; null ->
// nullptr. ValueError for unknown classes (listing the known ones) or malformed objects.
InitializerPtr from_config(const json& j);
// The Keras 3 object {"module": "keras.initializers", "class_name", "config",
// "registered_name": null}; null for nullptr.
json serialize(const InitializerPtr& init);
std::vector<std::string> known_names();

}  // namespace keras::initializers

namespace keras {

// What an initializer option of a layer accepts: a Keras name, an initializer object, or
// nothing (nullptr). Names resolve at once, so an unknown name fails where it is written.
//   DenseOptions{.units = 4, .kernel_initializer = "he_normal"}
//   DenseOptions{.units = 4, .kernel_initializer = std::make_shared<initializers::Orthogonal>(2.0)}
class InitializerArg {
 public:
  InitializerArg() = default;
  InitializerArg(std::nullptr_t) {}
  InitializerArg(const char* name) : ptr_(initializers::get(name)) {}
  InitializerArg(const std::string& name) : ptr_(initializers::get(name)) {}
  template <class T>
    requires std::derived_from<T, Initializer>
  InitializerArg(std::shared_ptr<T> init) : ptr_(std::move(init)) {}
  const InitializerPtr& ptr() const { return ptr_; }
  explicit operator bool() const { return ptr_ != nullptr; }

 private:
  InitializerPtr ptr_;
};

}  // namespace keras
