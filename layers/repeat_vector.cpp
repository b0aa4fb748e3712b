#include "layers/repeat_vector.h"

#include "backend/ops.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

RepeatVectorImpl::RepeatVectorImpl(RepeatVectorOptions options)
    : Layer(config::base_options(options)), options_(std::move(options)) {
  if (options_.n < 1) fail<ValueError>(where(), "n >= 1", std::to_string(options_.n));
}

void RepeatVectorImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 1) fail<ShapeError>(where(), "one input", std::to_string(shapes.size()) + " inputs");
  if (shapes[0].size() != 2) fail<ShapeError>(where(), "an input of rank 2 (batch, features)", "shape " + shape_str(shapes[0]));
}

std::vector<Shape> RepeatVectorImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  return {{shapes[0][0], options_.n, shapes[0][1]}};
}

TensorList RepeatVectorImpl::call(const TensorList& inputs, const CallContext&) {
  const Tensor& x = inputs[0];
  Tensor row = ops::reshape(x, {x.dim(0), 1, x.dim(1)});
  return {ops::broadcast_to(row, {x.dim(0), options_.n, x.dim(1)})};
}

json RepeatVectorImpl::get_config() const {
  json c = base_config();
  c["n"] = options_.n;
  return c;
}

RepeatVectorOptions repeat_vector_options_from_config(const json& c) {
  RepeatVectorOptions o;
  config::read_base_keys(c, o);
  if (!c.contains("n") || !c["n"].is_number_integer())
    fail<ValueError>("RepeatVector config", "an integer 'n'", c.contains("n") ? c["n"].dump() : "none");
  o.n = c["n"].get<int64_t>();
  return o;
}

KERAS_REGISTER_LAYER(RepeatVector, [](const json& c) -> LayerPtr {
  return std::make_shared<RepeatVectorImpl>(repeat_vector_options_from_config(c));
});
KERAS_SIGNATURE(RepeatVector);

}  // namespace keras::layers
