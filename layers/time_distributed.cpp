#include "layers/time_distributed.h"

#include "backend/ops.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

namespace {

// (batch, time, rest...) -> (batch * time, rest...); unknown extents stay -1.
Shape merged(const Shape& s) {
  Shape out(s.begin() + 1, s.end());
  out[0] = s[0] < 0 || s[1] < 0 ? -1 : s[0] * s[1];
  return out;
}

}  // namespace

TimeDistributedImpl::TimeDistributedImpl(TimeDistributedOptions o) : Layer(config::base_options(o)), layer_(std::move(o.layer)) {
  if (!layer_) fail<ValueError>(where(), "a layer to apply", "none");
}

void TimeDistributedImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 1) fail<ShapeError>(where(), "one input", std::to_string(shapes.size()) + " inputs");
  if (shapes[0].size() < 3)
    fail<ShapeError>(where(), "an input of rank >= 3 (batch, time, ...)", "shape " + shape_str(shapes[0]));
}

void TimeDistributedImpl::build(const std::vector<Shape>& shapes) {
  layer_->update_paths(prefix_ + name() + "/");
  // Keras builds the inner layer for (batch, rest...): the batch extent, not batch * time.
  Shape child(shapes[0]);
  child.erase(child.begin() + 1);
  layer_->ensure_built({child});
}

std::vector<Shape> TimeDistributedImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  Shape child(shapes[0]);
  child.erase(child.begin() + 1);
  std::vector<Shape> inner = layer_->compute_output_shape({child});
  if (inner.size() != 1) fail<ValueError>(where(), "a layer with one output", std::to_string(inner.size()) + " outputs");
  Shape out = inner[0];
  out.insert(out.begin() + 1, shapes[0][1]);
  return {out};
}

TensorList TimeDistributedImpl::call(const TensorList& inputs, const CallContext& ctx) {
  const Shape& s = inputs[0].shape();
  CallArgs args{.training = ctx.training};
  // Keras hands each timestep's mask to a layer whose call takes one; a (batch, time) mask has no
  // per-step part (Keras's (batch,) slices are read by no layer), so only a mask of rank >= 3
  // (Embedding ids of (batch, time, words)) is handed on.
  const Tensor mask = ctx.mask(0);
  if (mask.defined() && mask.rank() >= 3 && keras_signature(layer_->class_name()).takes_mask)
    args.mask = {ops::reshape(mask, merged(mask.shape()))};
  Tensor y = (*layer_)(ops::reshape(inputs[0], merged(s)), args);
  Shape out = y.shape();
  out[0] = s[1];
  out.insert(out.begin(), s[0]);
  return {ops::reshape(y, out)};
}

void TimeDistributedImpl::update_paths(const std::string& prefix) {
  Layer::update_paths(prefix);
  prefix_ = prefix;
  layer_->update_paths(prefix + name() + "/");
}

json TimeDistributedImpl::get_config() const {
  json c = base_config();
  c["layer"] = config::serialize_nested_layer(*layer_);
  return c;
}

KERAS_REGISTER_LAYER(TimeDistributed, [](const json& c) -> LayerPtr {
  TimeDistributedOptions o;
  config::read_base_keys(c, o);
  if (!c.contains("layer")) fail<ValueError>("TimeDistributed config", "a 'layer'", "none");
  o.layer = config::nested_layer_from_config(c["layer"], "TimeDistributed config layer");
  return std::make_shared<TimeDistributedImpl>(std::move(o));
});
KERAS_SIGNATURE(TimeDistributed, .takes_mask = true);

}  // namespace keras::layers
