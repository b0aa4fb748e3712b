// Arguments and helpers shared by the image preprocessing layers (Resizing, CenterCrop and the
// Random* augmentation layers): Keras's `factor` forms, value ranges, fill modes, the
// crop-to-aspect-ratio box, per-image random draws and the rank-3/rank-4 input convention.
#pragma once
#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/random.h"
#include "backend/tensor.h"
#include "layers/layer_config.h"
#include "layers/spatial_args.h"

namespace keras::layers {

using json = nlohmann::json;

// A Keras factor: one number v or a pair (a, b). `.factor = 0.2` and `.factor = {-0.1, 0.3}`
// both read as in Keras; to_json writes the form it was given (a number or [a, b]).
struct FactorArg {
  double first = 0.0, second = 0.0;
  bool pair = false;
  FactorArg(double v = 0.0) : first(v), second(v) {}
  FactorArg(double a, double b) : first(a), second(b), pair(true) {}
  bool operator==(const FactorArg&) const = default;
  json to_json() const { return pair ? json::array({first, second}) : json(first); }
  std::string str() const;
  // A number or a list of 2 numbers; ValueError naming `where` otherwise.
  static FactorArg from_json(const json& j, const std::string& where);
};

// Keras's BaseImagePreprocessingLayer._set_factor: a pair is sorted and must overlap
// [lo_bound, hi_bound]; a number v must lie in the bounds and gives (max(-|v|, lo_bound), |v|).
// ValueError naming `where` and the accepted range otherwise.
std::pair<double, double> factor_range(const FactorArg& f, double lo_bound, double hi_bound, const std::string& where);

// (min, max) of the pixel values, as Keras's value_range; `.value_range = {0, 1}`.
using ValueRange = std::array<double, 2>;
ValueRange value_range_from_json(const json& j, const std::string& where);

// ValueError unless fill_mode is reflect/wrap/constant/nearest and interpolation
// nearest/bilinear (Keras 3's RandomRotation/RandomZoom/RandomTranslation choices).
void check_fill_and_interpolation(const std::string& where, const std::string& fill_mode, const std::string& interpolation);

// ValueError naming `where` unless the target (height, width) are both >= 1.
void check_target_size(const std::string& where, int64_t height, int64_t width);

// The output dtype of the image layers: a floating input's, else float32 (integer pixels).
inline DType image_output_dtype(DType in) { return is_floating(in) ? in : DType::float32; }

// ShapeError unless there is one input of rank 3 (one image) or 4 (a batch), channels last.
void check_image_input(const std::string& where, const std::vector<Shape>& shapes);

// The input as a float batch: integer images are cast to float32 (Keras casts to the layer's
// compute dtype) and a rank-3 image gains a batch axis. restore_rank undoes the batch axis.
Tensor as_image_batch(const Tensor& x);
Tensor restore_rank(const Tensor& y, int input_rank);

// The largest centred window of an (h, w) image with the aspect ratio of (target_h, target_w),
// as keras.utils.image_utils.smart_resize and Resizing(crop_to_aspect_ratio=True) compute it.
struct CropBox {
  int64_t top = 0, left = 0, height = 0, width = 0;
};
CropBox aspect_ratio_crop_box(int64_t h, int64_t w, int64_t target_h, int64_t target_w);

// Crops `box` out of x (N, H, W, C) and resizes it to (target_h, target_w) bilinearly (no resize
// when the box already has that size). Differentiable in x.
Tensor crop_and_resize(const Tensor& x, const CropBox& box, int64_t target_h, int64_t target_w);

// A seed as Keras's random.make_default_seed draws one (an int in [1, 1e9]), from the global
// generator, for layers whose config always records a seed (RandomCrop).
int64_t default_seed();

// `n` float32 draws uniform in [lo, hi) from `gen` (lo == hi gives lo exactly).
std::vector<float> uniform_draws(Generator& gen, int64_t n, double lo, double hi);

// (n, 8) float32 transforms for ops::affine_transform from rows [a0 a1 a2 b0 b1 b2 c0 c1], on
// `device` (the images').
Tensor transform_rows(const std::vector<std::array<float, 8>>& rows, Device device);

// A seed as Keras writes it (null when unset), and back.
json seed_to_json(const std::optional<int64_t>& seed);
std::optional<uint64_t> seed_for_generator(const std::optional<int64_t>& seed);

// The config keys of the fill-mode layers (RandomRotation, RandomZoom, RandomTranslation):
// fill_mode, interpolation, seed, fill_value, data_format; plus the base keys when reading.
template <class Options>
void read_fill_keys(const json& c, Options& o) {
  config::read_base_keys(c, o);
  o.fill_mode = c.value("fill_mode", o.fill_mode);
  o.interpolation = c.value("interpolation", o.interpolation);
  o.seed = config::optional_int(c, "seed");
  if (c.contains("fill_value") && c["fill_value"].is_number()) o.fill_value = c["fill_value"].get<double>();
  o.data_format = data_format_from_config(c);
}
template <class Options>
void write_fill_keys(json& c, const Options& o) {
  c["data_format"] = o.data_format;
  c["fill_mode"] = o.fill_mode;
  c["fill_value"] = o.fill_value;
  c["interpolation"] = o.interpolation;
  c["seed"] = seed_to_json(o.seed);
}

// A required factor-like entry `key` of a `cls` config; ValueError naming both when absent.
FactorArg required_factor(const json& c, const std::string& key, const std::string& cls);

// The config of the value-range layers (RandomContrast, RandomBrightness): factor (required),
// value_range, seed, data_format, plus the base keys; and the keys they write, factor as the
// (lower, upper) pair Keras writes.
template <class Options>
Options value_range_options_from_config(const json& c, const std::string& cls) {
  Options o;
  config::read_base_keys(c, o);
  o.factor = required_factor(c, "factor", cls);
  if (c.contains("value_range")) o.value_range = value_range_from_json(c["value_range"], cls + " config");
  o.seed = config::optional_int(c, "seed");
  o.data_format = data_format_from_config(c);
  return o;
}
template <class Options>
void write_value_range_keys(json& c, const Options& o, std::pair<double, double> range) {
  c["data_format"] = o.data_format;
  c["factor"] = json::array({range.first, range.second});
  c["value_range"] = json::array({o.value_range[0], o.value_range[1]});
  c["seed"] = seed_to_json(o.seed);
}

}  // namespace keras::layers
