#include "layers/softmax.h"

#include "backend/ops.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

SoftmaxImpl::SoftmaxImpl(SoftmaxOptions options) : Layer(config::base_options(options)), options_(std::move(options)) {}

void SoftmaxImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 1) fail<ShapeError>(where(), "one input", std::to_string(shapes.size()) + " inputs");
  normalize_axis(options_.axis, static_cast<int64_t>(shapes[0].size()), where() + " on input shape " + shape_str(shapes[0]));
}

TensorList SoftmaxImpl::call(const TensorList& inputs, const CallContext&) {
  return {ops::softmax(inputs[0], static_cast<int>(options_.axis))};
}

json SoftmaxImpl::get_config() const {
  json c = base_config();
  c["axis"] = options_.axis;
  return c;
}

SoftmaxOptions softmax_options_from_config(const json& c) {
  SoftmaxOptions o;
  config::read_base_keys(c, o);
  if (c.contains("axis")) {
    const json& a = c["axis"];
    if (a.is_number_integer()) o.axis = a.get<int64_t>();
    else if (a.is_array() && a.size() == 1 && a[0].is_number_integer()) o.axis = a[0].get<int64_t>();
    else fail<NotImplementedError>("Softmax config 'axis'", "one axis", a.dump(), "Softmax over several axes is not supported.");
  }
  return o;
}

KERAS_REGISTER_LAYER(Softmax, [](const json& c) -> LayerPtr { return std::make_shared<SoftmaxImpl>(softmax_options_from_config(c)); });
KERAS_SIGNATURE(Softmax, .built_at_init = true, .takes_mask = true);

}  // namespace keras::layers
