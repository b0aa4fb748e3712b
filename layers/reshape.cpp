#include "layers/reshape.h"

#include <algorithm>

#include "backend/ops.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

ReshapeImpl::ReshapeImpl(ReshapeOptions options) : Layer(config::base_options(options)), options_(std::move(options)) {
  const Shape& t = options_.target_shape;
  if (std::count(t.begin(), t.end(), int64_t{-1}) > 1 ||
      std::any_of(t.begin(), t.end(), [](int64_t d) { return d == 0 || d < -1; }))
    fail<ValueError>(where(), "target_shape extents >= 1 with at most one -1", shape_str(t));
}

namespace {
int64_t per_sample_count(const Shape& s) {  // -1 when any non-batch extent is unknown
  int64_t n = 1;
  for (size_t i = 1; i < s.size(); ++i) {
    if (s[i] < 0) return -1;
    n *= s[i];
  }
  return n;
}
}  // namespace

Shape ReshapeImpl::resolved_target(int64_t per_sample) const {
  Shape t = options_.target_shape;
  int64_t known = 1;
  for (auto d : t)
    if (d > 0) known *= d;
  for (auto& d : t)
    if (d < 0) d = per_sample < 0 ? -1 : per_sample / known;
  return t;
}

void ReshapeImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 1) fail<ShapeError>(where(), "one input", std::to_string(shapes.size()) + " inputs");
  if (shapes[0].empty()) fail<ShapeError>(where(), "an input with a batch axis", "a scalar");
  int64_t n = per_sample_count(shapes[0]);
  if (n < 0) return;  // checked when the extents are known
  const Shape& t = options_.target_shape;
  bool infer = std::find(t.begin(), t.end(), int64_t{-1}) != t.end();
  int64_t known = 1;
  for (auto d : t)
    if (d > 0) known *= d;
  bool fits = infer ? (known > 0 && n % known == 0) : n == known;
  if (!fits)
    fail<ShapeError>(where(), "an input whose " + std::string(infer ? "per-sample size is a multiple of " : "per-sample size is ") +
                     std::to_string(known) + " to reshape into target_shape " + shape_str(t),
                     "shape " + shape_str(shapes[0]) + " (" + std::to_string(n) + " elements per sample)");
}

TensorList ReshapeImpl::call(const TensorList& inputs, const CallContext&) {
  const Tensor& x = inputs[0];
  Shape out{x.dim(0)};
  Shape t = resolved_target(per_sample_count(x.shape()));
  out.insert(out.end(), t.begin(), t.end());
  return {ops::reshape(x, out)};
}

std::vector<Shape> ReshapeImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  Shape out{shapes[0][0]};
  Shape t = resolved_target(per_sample_count(shapes[0]));
  out.insert(out.end(), t.begin(), t.end());
  return {out};
}

json ReshapeImpl::get_config() const {
  json c = base_config();
  c["target_shape"] = config::shape_to_json(options_.target_shape, false);
  return c;
}

ReshapeOptions reshape_options_from_config(const json& c) {
  ReshapeOptions o;
  config::read_base_keys(c, o);
  if (!c.contains("target_shape"))
    fail<ValueError>("Reshape config", "a 'target_shape'", "none");
  o.target_shape = config::shape_from_json(c["target_shape"], "Reshape config 'target_shape'");
  return o;
}

KERAS_REGISTER_LAYER(Reshape, [](const json& c) -> LayerPtr {
  return std::make_shared<ReshapeImpl>(reshape_options_from_config(c));
});
KERAS_SIGNATURE(Reshape, .built_at_init = true);

}  // namespace keras::layers
