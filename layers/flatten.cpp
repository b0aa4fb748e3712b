#include "layers/flatten.h"

#include <numeric>

#include "backend/ops.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

FlattenImpl::FlattenImpl(FlattenOptions options) : Layer(config::base_options(options)), options_(std::move(options)) {
  if (options_.data_format != "channels_last" && options_.data_format != "channels_first")
    fail<ValueError>(where(), "data_format 'channels_last' or 'channels_first'", "'" + options_.data_format + "'");
}

void FlattenImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 1) fail<ShapeError>(where(), "one input", std::to_string(shapes.size()) + " inputs");
  if (shapes[0].empty()) fail<ShapeError>(where(), "an input with a batch axis", "a scalar");
}

TensorList FlattenImpl::call(const TensorList& inputs, const CallContext&) {
  Tensor x = inputs[0];
  int rank = x.rank();
  if (options_.data_format == "channels_first" && rank > 2) {
    std::vector<int> perm{0};
    for (int i = 2; i < rank; ++i) perm.push_back(i);
    perm.push_back(1);
    x = ops::transpose(x, perm);
  }
  int64_t batch = x.dim(0);
  int64_t rest = 1;
  for (int i = 1; i < rank; ++i) rest *= x.dim(i);
  return {ops::reshape(x, {batch, rest})};
}

std::vector<Shape> FlattenImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  const Shape& s = shapes[0];
  int64_t rest = 1;
  for (size_t i = 1; i < s.size(); ++i) rest = (s[i] < 0 || rest < 0) ? -1 : rest * s[i];
  return {{s[0], rest}};
}

json FlattenImpl::get_config() const {
  json c = base_config();
  c["data_format"] = options_.data_format;
  return c;
}

FlattenOptions flatten_options_from_config(const json& c) {
  FlattenOptions o;
  config::read_base_keys(c, o);
  if (c.contains("data_format") && c["data_format"].is_string()) o.data_format = c["data_format"];
  return o;
}

KERAS_REGISTER_LAYER(Flatten, [](const json& c) -> LayerPtr {
  return std::make_shared<FlattenImpl>(flatten_options_from_config(c));
});

}  // namespace keras::layers
