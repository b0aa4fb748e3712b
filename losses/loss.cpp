#include "losses/loss.h"

#include "backend/autodiff.h"
#include "backend/named_registry.h"
#include "backend/ops.h"

namespace keras::losses {

namespace {

const std::vector<std::string>& allowed_reductions() {
  static const std::vector<std::string> names = {"sum_over_batch_size", "sum", "mean", "mean_with_sample_weight",
                                                 "none"};
  return names;
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Reshape that keeps the tape when the input is recorded (ops::reshape), and is a plain view
// otherwise (labels, weights), so constant inputs cost no op dispatch.
Tensor reshape_to(const Tensor& x, const Shape& shape) {
  return x.requires_grad() ? ops::reshape(x, shape) : x.contiguous().view(shape);
}

Shape with_trailing_one(Shape s) {
  s.push_back(1);
  return s;
}

Shape without_last(Shape s) {
  s.pop_back();
  return s;
}

NamedRegistry<LossFactory>& registry() {
  static NamedRegistry<LossFactory> r;
  return r;
}

}  // namespace

std::string standardize_reduction(const std::string& reduction) {
  if (reduction.empty() || reduction == "auto") return "sum_over_batch_size";
  for (const auto& r : allowed_reductions())
    if (r == reduction) return r;
  fail<ValueError>("loss reduction", "one of " + join(allowed_reductions()), "'" + reduction + "'");
}

Loss::Loss(std::string name, std::string reduction) : name_(std::move(name)) {
  try {
    reduction_ = standardize_reduction(reduction);
  } catch (const ValueError&) {
    fail<ValueError>("Loss '" + name_ + "'", "a reduction among " + join(allowed_reductions()),
                     "'" + reduction + "'");
  }
}

std::string Loss::where() const { return "Loss '" + name_ + "' (" + class_name() + ")"; }

json Loss::get_config() const { return json{{"name", name_}, {"reduction", reduction_}}; }

Tensor Loss::operator()(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) const {
  if (!y_true.defined() || !y_pred.defined())
    fail<ValueError>(where(), "defined y_true and y_pred", "an undefined tensor");
  // Losses compute in float32 under mixed precision (Keras casts to the loss's dtype).
  auto float32 = [](const Tensor& t) { return is_half(t.dtype()) ? ops::cast(t, DType::float32) : t; };
  Tensor losses = call(float32(y_true), float32(y_pred));
  // Keras masks the losses of padded timesteps through the prediction's mask.
  const Tensor weight = apply_mask(sample_weight, y_pred.keras_mask(), losses.dtype(), reduction_);
  try {
    return reduce_weighted_values(losses, weight, reduction_);
  } catch (const ShapeError&) {
    fail<ShapeError>(where(), "sample_weight that broadcasts to the losses of shape " + shape_str(losses.shape()),
                     "sample_weight of shape " + shape_str(sample_weight.shape()),
                     "Pass one weight per sample, shape (batch,) or (batch, 1).");
  }
}

Tensor apply_mask(const Tensor& sample_weight, const Tensor& mask, DType dtype, const std::string& reduction) {
  if (!mask.defined()) return sample_weight;
  NoGradGuard no_grad;
  Tensor weight = mask.astype(dtype);
  const std::string r = standardize_reduction(reduction);
  if (r == "mean" || r == "sum_over_batch_size") {
    const double valid = ops::sum(weight).item();
    weight = ops::multiply(weight, valid > 0 ? static_cast<double>(weight.numel()) / valid : 0.0);
  }
  if (!sample_weight.defined()) return weight;
  Tensor sw = sample_weight.dtype() == dtype ? sample_weight : sample_weight.astype(dtype);
  if (!(sw.device() == weight.device())) sw = sw.to(weight.device());
  std::tie(weight, sw) = squeeze_or_expand_to_same_rank(weight, sw);
  return ops::multiply(weight, sw);
}

std::pair<Tensor, Tensor> squeeze_or_expand_to_same_rank(const Tensor& a, const Tensor& b) {
  const int ra = a.rank(), rb = b.rank();
  if (ra == rb + 1 && a.shape().back() == 1) {
    if (rb == 1) return {a, reshape_to(b, with_trailing_one(b.shape()))};
    return {reshape_to(a, without_last(a.shape())), b};
  }
  if (rb == ra + 1 && b.shape().back() == 1) {
    if (ra == 1) return {reshape_to(a, with_trailing_one(a.shape())), b};
    return {a, reshape_to(b, without_last(b.shape()))};
  }
  return {a, b};
}

DType compute_dtype(const Tensor& y_pred) { return is_floating(y_pred.dtype()) ? y_pred.dtype() : DType::float32; }

Tensor to_compute(const Tensor& x, DType dtype, Device device) {
  Tensor out = x;
  if (!(out.device() == device)) out = out.to(device);
  if (out.dtype() != dtype) out = out.requires_grad() ? ops::cast(out, dtype) : out.astype(dtype);
  return out;
}

void check_same_shape(const std::string& where, const Tensor& y_true, const Tensor& y_pred) {
  if (y_true.shape() != y_pred.shape())
    fail<ShapeError>(where, "y_true and y_pred of one shape",
                     "y_true " + shape_str(y_true.shape()) + " and y_pred " + shape_str(y_pred.shape()));
}

void read_base_config(const json& config, std::string& reduction, std::string& name) {
  if (config.contains("reduction")) {
    const json& r = config["reduction"];
    reduction = r.is_null() ? "none" : r.get<std::string>();
  }
  if (config.contains("name") && config["name"].is_string()) name = config["name"].get<std::string>();
}

Tensor reduce_weighted_values(const Tensor& values_in, const Tensor& sample_weight, const std::string& reduction_in) {
  const std::string reduction = standardize_reduction(reduction_in);
  Tensor values = values_in;
  Tensor weight;
  if (sample_weight.defined()) {
    weight = sample_weight.dtype() == values.dtype() ? sample_weight : sample_weight.astype(values.dtype());
    if (!(weight.device() == values.device())) weight = weight.to(values.device());
    std::tie(values, weight) = squeeze_or_expand_to_same_rank(values, weight);
    broadcast_shapes(values.shape(), weight.shape(), "loss sample_weight");  // ShapeError if they do not fit
    values = ops::multiply(values, weight);
  }
  if (reduction == "none" || values.rank() == 0 || values.shape() == Shape{0}) return values;
  Tensor loss = ops::sum(values);
  if (reduction == "sum") return loss;
  double divisor = static_cast<double>(values.numel());
  if (reduction == "mean_with_sample_weight" && weight.defined()) {
    divisor = 0;
    for (double w : weight.to_vector<double>()) divisor += w;
  }
  // divide_no_nan, as Keras: an empty batch or all-zero weights give 0, not NaN.
  if (divisor == 0) return ops::multiply(loss, 0.0);
  return ops::divide(loss, Tensor::scalar(divisor, loss.dtype(), loss.device()));
}

// ---- registry ----

void register_loss(const std::string& class_name, LossFactory factory, const std::vector<std::string>& aliases) {
  registry().add(class_name, std::move(factory), aliases);
}

std::string canonical_class_name(const std::string& identifier) { return registry().canonical(identifier); }

std::vector<std::string> registered_losses() { return registry().names(); }

namespace {
LossPtr make(const std::string& identifier, const json& config) {
  std::string cls = canonical_class_name(identifier);
  if (cls.empty())
    fail<ValueError>("losses::get", "a known loss (" + join(registered_losses()) + ")", "'" + identifier + "'",
                     "Custom losses must be registered with losses::register_loss.");
  return registry().factory(cls)(config);
}
}  // namespace

LossPtr get(const std::string& identifier) { return make(identifier, json::object()); }

LossPtr deserialize(const json& config) {
  if (config.is_string()) return get(config.get<std::string>());
  if (!config.is_object() || !config.contains("class_name") || !config["class_name"].is_string())
    fail<ValueError>("losses::deserialize", "a loss name or an object with \"class_name\"", config.dump());
  const std::string cls = config["class_name"].get<std::string>();
  // Keras 3 writes plain loss functions as {"class_name": "function", "config": "<fn name>"}.
  if (cls == "function" && config.contains("config") && config["config"].is_string())
    return get(config["config"].get<std::string>());
  json inner = config.contains("config") && config["config"].is_object() ? config["config"] : json::object();
  return make(cls, inner);
}

json serialize(const Loss& loss) {
  return json{{"module", "keras.losses"},
              {"class_name", loss.class_name()},
              {"config", loss.get_config()},
              {"registered_name", nullptr}};
}

}  // namespace keras::losses
