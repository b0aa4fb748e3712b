#include "layers/cropping1d.h"

#include "backend/ops.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

void require_one_sequence_input(const std::vector<Shape>& shapes, const std::string& where) {
  if (shapes.size() != 1) fail<ShapeError>(where, "one input", std::to_string(shapes.size()) + " inputs");
  if (shapes[0].size() != 3)
    fail<ShapeError>(where, "an input of rank 3 (batch, steps, channels)", "shape " + shape_str(shapes[0]));
}

Cropping1DImpl::Cropping1DImpl(Cropping1DOptions options)
    : Layer(config::base_options(options)), options_(std::move(options)) {
  if (options_.cropping.first < 0 || options_.cropping.second < 0)
    fail<ValueError>(where(), "non-negative cropping", options_.cropping.str());
}

void Cropping1DImpl::validate_input(const std::vector<Shape>& shapes) const {
  require_one_sequence_input(shapes, where());
  int64_t steps = shapes[0][1];
  if (steps >= 0 && options_.cropping.first + options_.cropping.second >= steps)
    fail<ShapeError>(where(), "cropping smaller than the input length",
                     "cropping " + options_.cropping.str() + " of input shape " + shape_str(shapes[0]));
}

std::vector<Shape> Cropping1DImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  Shape s = shapes[0];
  if (s[1] >= 0) s[1] -= options_.cropping.first + options_.cropping.second;
  return {s};
}

TensorList Cropping1DImpl::call(const TensorList& inputs, const CallContext&) {
  const Tensor& x = inputs[0];
  int64_t kept = x.dim(1) - options_.cropping.first - options_.cropping.second;
  return {ops::slice(x, {0, options_.cropping.first, 0}, {-1, kept, -1})};
}

json Cropping1DImpl::get_config() const {
  json c = base_config();
  c["cropping"] = options_.cropping.to_json();
  return c;
}

Cropping1DOptions cropping1d_options_from_config(const json& c) {
  Cropping1DOptions o;
  config::read_base_keys(c, o);
  if (c.contains("cropping")) o.cropping = PairArg::from_json(c["cropping"], "Cropping1D config 'cropping'");
  return o;
}

KERAS_REGISTER_LAYER(Cropping1D, [](const json& c) -> LayerPtr {
  return std::make_shared<Cropping1DImpl>(cropping1d_options_from_config(c));
});
KERAS_SIGNATURE(Cropping1D);

}  // namespace keras::layers
