#include "layers/augment_args.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "backend/ops_nn.h"

namespace keras::layers {

std::string FactorArg::str() const {
  std::ostringstream s;
  if (pair) s << "(" << first << ", " << second << ")";
  else s << first;
  return s.str();
}

FactorArg FactorArg::from_json(const json& j, const std::string& where) {
  if (j.is_number()) return FactorArg(j.get<double>());
  if (j.is_array() && j.size() == 2 && j[0].is_number() && j[1].is_number())
    return FactorArg(j[0].get<double>(), j[1].get<double>());
  fail<ValueError>(where, "a number or a list of 2 numbers", j.dump());
}

std::pair<double, double> factor_range(const FactorArg& f, double lo_bound, double hi_bound, const std::string& where) {
  std::ostringstream expected;
  expected << "factor a number (or a pair of numbers) in [" << lo_bound << ", " << hi_bound << "]";
  if (f.pair) {
    if (!(f.first <= hi_bound && f.second >= lo_bound)) fail<ValueError>(where, expected.str(), f.str());
    return {std::min(f.first, f.second), std::max(f.first, f.second)};
  }
  if (!(f.first >= lo_bound && f.first <= hi_bound)) fail<ValueError>(where, expected.str(), f.str());
  const double v = std::abs(f.first);
  return {std::max(-v, lo_bound), v};
}

FactorArg required_factor(const json& c, const std::string& key, const std::string& cls) {
  if (!c.contains(key)) fail<ValueError>(cls + " config", "a '" + key + "' entry", c.dump());
  return FactorArg::from_json(c[key], cls + " config '" + key + "'");
}

ValueRange value_range_from_json(const json& j, const std::string& where) {
  if (j.is_array() && j.size() == 2 && j[0].is_number() && j[1].is_number()) return {j[0].get<double>(), j[1].get<double>()};
  fail<ValueError>(where, "value_range a list of 2 numbers", j.dump());
}

void check_fill_and_interpolation(const std::string& where, const std::string& fill_mode, const std::string& interpolation) {
  if (fill_mode != "reflect" && fill_mode != "wrap" && fill_mode != "constant" && fill_mode != "nearest")
    fail<ValueError>(where, "fill_mode one of 'reflect', 'wrap', 'constant', 'nearest'", "'" + fill_mode + "'");
  if (interpolation != "nearest" && interpolation != "bilinear")
    fail<ValueError>(where, "interpolation 'nearest' or 'bilinear'", "'" + interpolation + "'");
}

void check_target_size(const std::string& where, int64_t height, int64_t width) {
  if (height < 1 || width < 1)
    fail<ValueError>(where, "height and width >= 1", "(" + std::to_string(height) + ", " + std::to_string(width) + ")");
}

void check_image_input(const std::string& where, const std::vector<Shape>& shapes) {
  if (shapes.size() != 1) fail<ShapeError>(where, "one input", std::to_string(shapes.size()) + " inputs");
  if (shapes[0].size() != 3 && shapes[0].size() != 4)
    fail<ShapeError>(where, "an image of rank 3 (height, width, channels) or a batch of rank 4",
                     "shape " + shape_str(shapes[0]));
}

Tensor as_image_batch(const Tensor& x) {
  Tensor y = is_floating(x.dtype()) ? x : ops::cast(x, DType::float32);
  return y.rank() == 3 ? ops::expand_dims(y, 0) : y;
}

Tensor restore_rank(const Tensor& y, int input_rank) { return input_rank == 3 ? ops::squeeze(y, 0) : y; }

CropBox aspect_ratio_crop_box(int64_t h, int64_t w, int64_t target_h, int64_t target_w) {
  CropBox b;
  b.height = std::max<int64_t>(std::min<int64_t>(h, static_cast<int64_t>(static_cast<double>(w * target_h) / target_w)), 1);
  b.width = std::max<int64_t>(std::min<int64_t>(w, static_cast<int64_t>(static_cast<double>(h * target_w) / target_h)), 1);
  b.top = static_cast<int64_t>(static_cast<double>(h - b.height) / 2);
  b.left = static_cast<int64_t>(static_cast<double>(w - b.width) / 2);
  return b;
}

Tensor crop_and_resize(const Tensor& x, const CropBox& box, int64_t target_h, int64_t target_w) {
  Tensor y = x;
  if (box.height != x.dim(1) || box.width != x.dim(2))
    y = ops::slice(x, {0, box.top, box.left, 0}, {x.dim(0), box.height, box.width, x.dim(3)});
  if (y.dim(1) == target_h && y.dim(2) == target_w) return y;
  return ops::resize_bilinear2d(y, {target_h, target_w});
}

int64_t default_seed() { return static_cast<int64_t>(global_generator().next_seed() % 1000000000ULL) + 1; }

std::vector<float> uniform_draws(Generator& gen, int64_t n, double lo, double hi) {
  if (lo == hi) return std::vector<float>(n, static_cast<float>(lo));
  return random::uniform({n}, lo, hi, gen, DType::float32).to_vector<float>();
}

Tensor transform_rows(const std::vector<std::array<float, 8>>& rows, Device device) {
  std::vector<float> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  return Tensor::from_vector(flat, {static_cast<int64_t>(rows.size()), 8}, device);
}

json seed_to_json(const std::optional<int64_t>& seed) { return seed ? json(*seed) : json(nullptr); }

std::optional<uint64_t> seed_for_generator(const std::optional<int64_t>& seed) {
  if (!seed) return std::nullopt;
  return static_cast<uint64_t>(*seed);
}

}  // namespace keras::layers
