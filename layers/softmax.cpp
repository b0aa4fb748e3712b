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

TensorList SoftmaxImpl::call(const TensorList& inputs, const CallContext& ctx) {
  const Tensor& x = inputs[0];
  Tensor mask = ctx.mask(0);
  if (!mask.defined()) return {ops::softmax(x, static_cast<int>(options_.axis))};
  // Keras: the mask broadcasts against the input from the right (so a (batch, steps) sequence
  // mask does not fit (batch, steps, features)); non-bool masks keep entries > 0.5. Masked
  // entries get -1e9 before the softmax and 0 after it (an all-masked row gives zeros).
  bool fits = mask.rank() <= x.rank();
  for (int64_t i = 1; fits && i <= mask.rank(); ++i) {
    int64_t m = mask.dim(mask.rank() - i), n = x.dim(x.rank() - i);
    fits = m == 1 || m == n;
  }
  if (!fits)
    fail<ValueError>(where(), "a mask that broadcasts to the input " + shape_str(x.shape()) + " from the right",
                     "mask shape " + shape_str(mask.shape()), "Each mask extent must be 1 or the input's extent.");
  if (mask.dtype() != DType::boolean) mask = ops::greater(mask, Tensor::scalar(0.5, mask.dtype(), mask.device()));
  Tensor logits = ops::where(mask, x, Tensor::scalar(-1e9, x.dtype(), x.device()));
  Tensor y = ops::softmax(logits, static_cast<int>(options_.axis));
  return {ops::where(mask, y, Tensor::scalar(0, x.dtype(), x.device()))};
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
