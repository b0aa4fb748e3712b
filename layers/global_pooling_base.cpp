#include "layers/global_pooling_base.h"

#include "backend/ops.h"
#include "layers/layer_config.h"
#include "layers/mask_ops.h"

namespace keras::layers {

GlobalPoolingBaseImpl::GlobalPoolingBaseImpl(const GlobalPoolingOptions& options, bool max, int rank)
    : Layer(config::base_options(options)), options_(options), max_(max), rank_(rank) {}

void GlobalPoolingBaseImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 1) fail<ShapeError>(where(), "one input", std::to_string(shapes.size()) + " inputs");
  if (static_cast<int>(shapes[0].size()) != rank_ + 2)
    fail<ShapeError>(where(),
                     rank_ == 1 ? "an input of rank 3 (batch, steps, channels)"
                                : "an input of rank 4 (batch, height, width, channels)",
                     "shape " + shape_str(shapes[0]));
}

std::vector<Shape> GlobalPoolingBaseImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  const Shape& s = shapes[0];
  if (!options_.keepdims) return {{s.front(), s.back()}};
  Shape out(s.size(), 1);
  out.front() = s.front();
  out.back() = s.back();
  return {out};
}

TensorList GlobalPoolingBaseImpl::call(const TensorList& inputs, const CallContext& ctx) {
  std::vector<int64_t> axes = rank_ == 1 ? std::vector<int64_t>{1} : std::vector<int64_t>{1, 2};
  if (supports_masking() && ctx.mask(0).defined()) {
    // Keras: the sum over the unmasked steps over their count (0/0 = NaN for an all-masked row).
    const Tensor& x = inputs[0];
    Tensor keep = ops::expand_dims(ctx.mask(0), -1);
    Tensor kept = ops::where(keep, x, Tensor::scalar(0, x.dtype(), x.device()));
    return {ops::divide(ops::sum(kept, axes, options_.keepdims), ops::sum(masks::as_float(keep, x.dtype()), axes, options_.keepdims))};
  }
  return {max_ ? ops::max(inputs[0], axes, options_.keepdims) : ops::mean(inputs[0], axes, options_.keepdims)};
}

json GlobalPoolingBaseImpl::get_config() const {
  json c = base_config();
  c["data_format"] = options_.data_format;
  c["keepdims"] = options_.keepdims;
  return c;
}

GlobalPoolingOptions global_pooling_options_from_config(const json& c) {
  GlobalPoolingOptions o;
  config::read_base_keys(c, o);
  o.data_format = data_format_from_config(c);
  if (c.contains("keepdims") && c["keepdims"].is_boolean()) o.keepdims = c["keepdims"].get<bool>();
  return o;
}

}  // namespace keras::layers
