#include "layers/batch_normalization.h"

#include "backend/autodiff.h"
#include "backend/ops_add_relu.h"
#include "backend/instrumentation.h"
#include "backend/ops_batch_norm_relu.h"
#include "backend/collectives/collective_ops.h"
#include "backend/ops_nn.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"
#include "layers/mask_ops.h"

namespace keras::layers {

BatchNormalizationImpl::BatchNormalizationImpl(BatchNormalizationOptions options)
    : Layer(config::base_options(options)), options_(std::move(options)) {
  if (!(options_.epsilon > 0)) fail<ValueError>(where(), "epsilon > 0", std::to_string(options_.epsilon));
  if (!(options_.momentum >= 0 && options_.momentum <= 1))
    fail<ValueError>(where(), "momentum in [0, 1]", std::to_string(options_.momentum));
  for (const auto* init : {&options_.beta_initializer, &options_.gamma_initializer, &options_.moving_mean_initializer,
                           &options_.moving_variance_initializer})
    if (!init->ptr()) fail<ValueError>(where(), "an initializer for every weight", "none");
  if (options_.renorm)
    fail<NotImplementedError>(where() + " 'renorm'", "false", "true",
                              "Batch renormalization is not implemented; a model that uses it cannot be built here.");
  if (!options_.renorm_clipping.is_null() && !options_.renorm_clipping.is_object())
    fail<ValueError>(where() + " 'renorm_clipping'", "null or {\"rmax\", \"rmin\", \"dmax\"}",
                     options_.renorm_clipping.dump());
}

void BatchNormalizationImpl::validate_input(const std::vector<Shape>& shapes) const {
  // A functional graph's fused residual block passes the Add's other input as keyword "_residual".
  const bool residual = shapes.size() == 2 && current_call_args().keywords == std::vector<std::string>{"_residual"};
  if (residual && shapes[1] != shapes[0])
    fail<ShapeError>(where() + " input '_residual'", "the input's shape " + shape_str(shapes[0]), shape_str(shapes[1]));
  if (shapes.size() != 1 && !residual) fail<ShapeError>(where(), "one input", std::to_string(shapes.size()) + " inputs");
  const Shape& s = shapes[0];
  if (s.size() < 2) fail<ShapeError>(where(), "an input of rank >= 2 (batch, ..., channels)", "shape " + shape_str(s));
  int axis = normalize_axis(options_.axis, static_cast<int64_t>(s.size()), where());
  if (axis != static_cast<int>(s.size()) - 1)
    fail<NotImplementedError>(where(), "axis -1 (channels last)", "axis " + std::to_string(options_.axis) + " for input " + shape_str(s));
  if (built()) {
    int64_t c = build_input_shapes()[0].back();
    if (s.back() != c)
      fail<ShapeError>(where(), "input with " + std::to_string(c) + " channels on the last axis", "shape " + shape_str(s),
                       "The layer was built for inputs of shape " + shape_str(build_input_shapes()[0]) + ".");
  } else if (s.back() < 1) {
    fail<ShapeError>(where(), "a known channel axis", "shape " + shape_str(s));
  }
}

void BatchNormalizationImpl::build(const std::vector<Shape>& shapes) {
  const Shape c{shapes[0].back()};
  if (options_.scale)
    gamma_ = add_weight("gamma", c, options_.gamma_initializer.ptr(), true, options_.gamma_regularizer.ptr(),
                        options_.gamma_constraint.ptr());
  if (options_.center)
    beta_ = add_weight("beta", c, options_.beta_initializer.ptr(), true, options_.beta_regularizer.ptr(),
                       options_.beta_constraint.ptr());
  moving_mean_ = add_weight("moving_mean", c, options_.moving_mean_initializer.ptr(), false);
  moving_variance_ = add_weight("moving_variance", c, options_.moving_variance_initializer.ptr(), false);
  // As Keras's: the statistics and their update stay float32 under mixed policies (see call).
  for (Variable* v : {&gamma_, &beta_, &moving_mean_, &moving_variance_})
    if (v->defined()) v->set_autocast(false);
}

namespace {

// Keras's BatchNormalization._moments with a mask (batch, ...) one rank below x: mean and biased
// variance over the unmasked positions only, each count padded by Keras's epsilon 1e-7.
ops::BatchNormOutputs masked_moments(const Tensor& x, const Tensor& mask) {
  std::vector<int64_t> axes;
  for (int64_t a = 0; a + 1 < x.rank(); ++a) axes.push_back(a);
  Tensor keep = ops::expand_dims(mask, -1);
  Tensor zero = Tensor::scalar(0, x.dtype(), x.device());
  Tensor count = ops::add(ops::sum(ops::broadcast_to(masks::as_float(keep, x.dtype()), x.shape()), axes), 1e-7);
  Tensor mean = ops::divide(ops::sum(ops::where(keep, x, zero), axes), count);
  Tensor centered = ops::where(keep, ops::subtract(x, mean), zero);
  Tensor variance = ops::divide(ops::sum(ops::square(centered), axes), count);
  return {Tensor(), mean, variance};
}

// The moments over every process's batch (synchronized=true under data parallelism): sums and
// counts go through the differentiable all_sum, so gradients flow to every process's rows.
ops::BatchNormOutputs synchronized_moments(const Tensor& x, const Tensor& mask) {
  std::vector<int64_t> axes;
  for (int64_t a = 0; a + 1 < x.rank(); ++a) axes.push_back(a);
  Tensor zero = Tensor::scalar(0, x.dtype(), x.device());
  Tensor keep = mask.defined() ? ops::expand_dims(mask, -1) : Tensor();
  Tensor ones = keep.defined() ? ops::broadcast_to(masks::as_float(keep, x.dtype()), x.shape())
                               : Tensor::ones(x.shape(), x.dtype(), x.device());
  Tensor count = ops::all_sum(ops::sum(ones, axes));
  if (keep.defined()) count = ops::add(count, 1e-7);
  Tensor kept = keep.defined() ? ops::where(keep, x, zero) : x;
  Tensor mean = ops::divide(ops::all_sum(ops::sum(kept, axes)), count);
  Tensor centered = ops::subtract(x, mean);
  if (keep.defined()) centered = ops::where(keep, centered, zero);
  Tensor variance = ops::divide(ops::all_sum(ops::sum(ops::square(centered), axes)), count);
  return {Tensor(), mean, variance};
}

// The call option "_fused_activation" ("relu" or "relu6"; not Keras's) applies that activation
// to the output: a functional graph passes it when the layer's only reader is such a ReLU, which
// it then skips (keras/models/functional.cpp), so that training runs the fused
// batch_norm_relu_train (backend/ops_batch_norm_relu.h) on the CPU.
std::string fused_activation(const CallContext& ctx) {
  if (!ctx.options.is_object() || !ctx.options.contains("_fused_activation")) return "";
  const json& a = ctx.options["_fused_activation"];
  if (!a.is_string() || (a != "relu" && a != "relu6"))
    fail<ValueError>("BatchNormalization call option '_fused_activation'", "\"relu\" or \"relu6\"", a.dump());
  return a.get<std::string>();
}

// The keyword input "_residual" (not Keras's; with "_fused_activation" "relu") makes the output
// relu(normalized + residual): a functional graph passes it for a normalization whose only
// reader is a residual Add whose only reader is a ReLU, and skips those two (keras/models/
// functional.cpp), so that training runs the fused batch_norm_add_relu_train on the CPU.
Tensor residual_input(const TensorList& inputs, const CallContext& ctx, const std::string& act,
                      const std::string& where) {
  const TensorList r = ctx.keyword(inputs, "_residual");
  if (r.empty()) return Tensor();
  if (act != "relu")
    fail<ValueError>(where + " input '_residual'", "the call option _fused_activation \"relu\" beside it",
                     act.empty() ? "none" : "'" + act + "'");
  return r[0];
}

// moving = moving * momentum + batch statistic * (1 - momentum), as Keras updates them.
void update_moving_statistics(Variable& moving_mean, Variable& moving_variance, double m,
                              const ops::BatchNormOutputs& r) {
  NoGradGuard no_grad;
  // The batch statistics of two-byte inputs are float32, as Keras's; variables of a plain
  // bfloat16 policy take them rounded.
  auto like = [](const Tensor& t, const Variable& v) { return t.dtype() == v.dtype() ? t : ops::cast(t, v.dtype()); };
  const DType dt = moving_mean.dtype();
  // In place where value() is the stored tensor itself (no autocast copy) on the CPU.
  if ((dt == DType::float32 || dt == DType::float64) && moving_variance.dtype() == dt && !moving_mean.autocast() &&
      !moving_variance.autocast() && moving_mean.value().device().kind == DeviceKind::cpu &&
      r.mean.device().kind == DeviceKind::cpu) {
    ops::moving_average_update(moving_mean.value(), like(r.mean, moving_mean), m);  // in place, one op each
    ops::moving_average_update(moving_variance.value(), like(r.variance, moving_variance), m);
    return;
  }
  moving_mean.assign(ops::add(ops::multiply(moving_mean.value(), m), ops::multiply(like(r.mean, moving_mean), 1.0 - m)));
  moving_variance.assign(
      ops::add(ops::multiply(moving_variance.value(), m), ops::multiply(like(r.variance, moving_variance), 1.0 - m)));
}

}  // namespace

TensorList BatchNormalizationImpl::call(const TensorList& inputs, const CallContext& ctx) {
  const std::string act = fused_activation(ctx);
  if (const Tensor residual = residual_input(inputs, ctx, act, where()); residual.defined()) {
    // One pass where the op serves the case; else the normalization, then the Add and ReLU.
    const Tensor& x = inputs[0];
    const DType dt = x.dtype();
    // bfloat16 in one pass takes float32 weights (mixed_bfloat16), as the bf16 kernels read them.
    const bool one_pass = ctx.training && trainable() && !ctx.mask(0).defined() && !options_.synchronized &&
                          residual.shape() == x.shape() && residual.dtype() == dt && ops::add_relu_fuses(x) &&
                          residual.device().kind == DeviceKind::cpu && !instrumentation::split_fused_activations() &&
                          (dt != DType::bfloat16 || moving_mean_.dtype() == DType::float32);
    if (!one_pass) {
      CallContext plain = ctx;
      plain.keywords.clear();
      plain.options.erase("_fused_activation");
      if (plain.masks.size() > 1) plain.masks.resize(1);
      return {ops::add_then_relu(residual, call({x}, plain)[0])};
    }
    Tensor gamma = options_.scale ? gamma_.value() : Tensor();
    Tensor beta = options_.center ? beta_.value() : Tensor();
    ops::BatchNormOutputs r = ops::batch_norm_add_relu_training(x, residual, gamma, beta, options_.epsilon);
    update_moving_statistics(moving_mean_, moving_variance_, options_.momentum, r);
    return {r.y};
  }
  // Two-byte inputs are normalized in float32 and the result rounded back, as Keras does: the
  // batch-norm ops take them with the float32 statistics and weights and do exactly that (on
  // bfloat16 CPUs in one pass, backend/cpu/norm_kernels.cpp); the masked and synchronized
  // moments, made of other ops, get a float32 copy.
  const DType in_dtype = inputs[0].dtype();
  const Tensor& mask = ctx.mask(0);
  const collectives::Communicator* group = collectives::training_group();
  const bool synchronized = options_.synchronized && group && group->size() > 1;
  if (is_half(in_dtype) && ctx.training && trainable() && (mask.defined() || synchronized))
    return {ops::cast(call({ops::cast(inputs[0], DType::float32)}, ctx)[0], in_dtype)};
  auto activated = [&](const Tensor& y) { return act.empty() ? y : ops::activation(act, y); };
  const Tensor& x = inputs[0];
  Tensor gamma = options_.scale ? gamma_.value() : Tensor();
  Tensor beta = options_.center ? beta_.value() : Tensor();
  if (mask.defined() && mask.rank() + 1 != x.rank())
    fail<ShapeError>(where(), "a mask one rank below the input " + shape_str(x.shape()), "mask shape " + shape_str(mask.shape()));
  if (ctx.training && trainable()) {
    ops::BatchNormOutputs r;
    bool fused = false;  // r.y is activated already
    if (synchronized) {
      r = synchronized_moments(x, mask);
      r.y = ops::batch_norm_inference(x, r.mean, r.variance, gamma, beta, options_.epsilon);
    } else if (mask.defined()) {
      r = masked_moments(x, mask);
      r.y = ops::batch_norm_inference(x, r.mean, r.variance, gamma, beta, options_.epsilon);
    } else if (!act.empty() && x.device().kind == DeviceKind::cpu && !instrumentation::split_fused_activations()) {
      r = ops::batch_norm_relu_training(x, gamma, beta, options_.epsilon, act);
      fused = true;
    } else {
      r = ops::batch_norm_training(x, gamma, beta, options_.epsilon);
    }
    update_moving_statistics(moving_mean_, moving_variance_, options_.momentum, r);
    return {fused ? r.y : activated(r.y)};
  }
  return {activated(ops::batch_norm_inference(x, moving_mean_.value(), moving_variance_.value(), gamma, beta, options_.epsilon))};
}

std::vector<Shape> BatchNormalizationImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  return shapes;
}

json BatchNormalizationImpl::get_config() const {
  json c = base_config();
  c["axis"] = options_.axis;
  c["momentum"] = options_.momentum;
  c["epsilon"] = options_.epsilon;
  c["center"] = options_.center;
  c["scale"] = options_.scale;
  c["beta_initializer"] = initializers::serialize(options_.beta_initializer.ptr());
  c["gamma_initializer"] = initializers::serialize(options_.gamma_initializer.ptr());
  c["moving_mean_initializer"] = initializers::serialize(options_.moving_mean_initializer.ptr());
  c["moving_variance_initializer"] = initializers::serialize(options_.moving_variance_initializer.ptr());
  c["beta_regularizer"] = regularizers::serialize(options_.beta_regularizer.ptr());
  c["gamma_regularizer"] = regularizers::serialize(options_.gamma_regularizer.ptr());
  c["beta_constraint"] = constraints::serialize(options_.beta_constraint.ptr());
  c["gamma_constraint"] = constraints::serialize(options_.gamma_constraint.ptr());
  c["synchronized"] = options_.synchronized;
  c["renorm"] = options_.renorm;
  c["renorm_clipping"] = options_.renorm_clipping;
  c["renorm_momentum"] = options_.renorm_momentum;
  return c;
}

BatchNormalizationOptions batch_normalization_options_from_config(const json& c) {
  BatchNormalizationOptions o;
  config::read_base_keys(c, o);
  if (c.contains("axis")) {
    const json& a = c["axis"];
    if (a.is_number_integer()) o.axis = a.get<int64_t>();
    else if (a.is_array() && a.size() == 1 && a[0].is_number_integer()) o.axis = a[0].get<int64_t>();
    else fail<ValueError>("BatchNormalization config 'axis'", "an int or a list of one int", a.dump());
  }
  if (c.contains("momentum") && c["momentum"].is_number()) o.momentum = c["momentum"].get<double>();
  if (c.contains("epsilon") && c["epsilon"].is_number()) o.epsilon = c["epsilon"].get<double>();
  o.center = c.value("center", true);
  o.scale = c.value("scale", true);
  if (c.contains("beta_initializer")) o.beta_initializer = initializers::from_config(c["beta_initializer"]);
  if (c.contains("gamma_initializer")) o.gamma_initializer = initializers::from_config(c["gamma_initializer"]);
  if (c.contains("moving_mean_initializer")) o.moving_mean_initializer = initializers::from_config(c["moving_mean_initializer"]);
  if (c.contains("moving_variance_initializer"))
    o.moving_variance_initializer = initializers::from_config(c["moving_variance_initializer"]);
  if (c.contains("beta_regularizer")) o.beta_regularizer = regularizers::from_config(c["beta_regularizer"]);
  if (c.contains("gamma_regularizer")) o.gamma_regularizer = regularizers::from_config(c["gamma_regularizer"]);
  if (c.contains("beta_constraint")) o.beta_constraint = constraints::from_config(c["beta_constraint"]);
  if (c.contains("gamma_constraint")) o.gamma_constraint = constraints::from_config(c["gamma_constraint"]);
  o.synchronized = c.value("synchronized", false);
  // Absent from Keras 2 BatchNormalizationV1 and hand-written configs: Keras's defaults.
  o.renorm = c.value("renorm", false);
  if (c.contains("renorm_clipping")) o.renorm_clipping = c["renorm_clipping"];
  if (c.contains("renorm_momentum") && c["renorm_momentum"].is_number()) o.renorm_momentum = c["renorm_momentum"].get<double>();
  return o;
}

KERAS_REGISTER_LAYER(BatchNormalization, [](const json& c) -> LayerPtr {
  return std::make_shared<BatchNormalizationImpl>(batch_normalization_options_from_config(c));
});
KERAS_SIGNATURE(BatchNormalization, .takes_mask = true);

}  // namespace keras::layers
