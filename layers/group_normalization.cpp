#include "layers/group_normalization.h"

#include "backend/ops.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

GroupNormalizationImpl::GroupNormalizationImpl(GroupNormalizationOptions options)
    : Layer(config::base_options(options)), options_(std::move(options)) {
  if (options_.groups < 1 && options_.groups != -1)
    fail<ValueError>(where(), "groups >= 1 or -1 (instance normalization)", std::to_string(options_.groups));
  if (!(options_.epsilon > 0)) fail<ValueError>(where(), "epsilon > 0", std::to_string(options_.epsilon));
  if (!options_.beta_initializer.ptr() || !options_.gamma_initializer.ptr())
    fail<ValueError>(where(), "beta and gamma initializers", "none");
}

void GroupNormalizationImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 1) fail<ShapeError>(where(), "one input", std::to_string(shapes.size()) + " inputs");
  const Shape& s = shapes[0];
  const auto rank = static_cast<int64_t>(s.size());
  if (rank < 2 || options_.axis >= rank || options_.axis < -rank || normalize_axis(options_.axis, rank, where()) == 0)
    fail<ShapeError>(where(), "an input whose non-batch axis " + std::to_string(options_.axis) + " exists",
                     "shape " + shape_str(s));
  const int64_t c = s[static_cast<size_t>(normalize_axis(options_.axis, rank, where()))];
  if (c < 1) fail<ShapeError>(where(), "a known extent on axis " + std::to_string(options_.axis), "shape " + shape_str(s));
  if (built() && c != build_input_shapes()[0][static_cast<size_t>(normalize_axis(options_.axis, rank, where()))])
    fail<ShapeError>(where(), "the channel extent it was built for", "shape " + shape_str(s));
}

void GroupNormalizationImpl::build(const std::vector<Shape>& shapes) {
  const Shape& s = shapes[0];
  const int64_t c = s[static_cast<size_t>(normalize_axis(options_.axis, static_cast<int64_t>(s.size()), where()))];
  const int64_t groups = options_.groups == -1 ? c : options_.groups;
  if (c < groups || c % groups != 0)
    fail<ValueError>(where(), "groups (" + std::to_string(groups) + ") dividing the channel count",
                     std::to_string(c) + " channels");
  groups_ = groups;
  if (options_.scale)
    gamma_ = add_weight("gamma", {c}, options_.gamma_initializer.ptr(), true, options_.gamma_regularizer.ptr(),
                        options_.gamma_constraint.ptr());
  if (options_.center)
    beta_ = add_weight("beta", {c}, options_.beta_initializer.ptr(), true, options_.beta_regularizer.ptr(),
                       options_.beta_constraint.ptr());
}

TensorList GroupNormalizationImpl::call(const TensorList& inputs, const CallContext&) {
  const Tensor& x = inputs[0];
  const Shape& s = x.shape();
  const auto rank = static_cast<int64_t>(s.size());
  const auto axis = static_cast<size_t>(normalize_axis(options_.axis, rank, where()));
  const int64_t c = s[axis];
  // (B, ..., C, ...) -> (B, ..., G, C / G, ...): statistics over all but the batch and G axes.
  Shape grouped = s, broadcast(s.size(), 1);
  grouped[axis] = c / groups_;
  grouped.insert(grouped.begin() + static_cast<std::ptrdiff_t>(axis), groups_);
  broadcast[axis] = c / groups_;
  broadcast.insert(broadcast.begin() + static_cast<std::ptrdiff_t>(axis), groups_);
  std::vector<int64_t> reduce;
  for (int64_t a = 1; a <= rank; ++a)
    if (a != static_cast<int64_t>(axis)) reduce.push_back(a);
  Tensor g = ops::reshape(x, grouped);
  Tensor mean = ops::mean(g, reduce, true);
  Tensor centered = ops::subtract(g, mean);
  Tensor variance = ops::mean(ops::square(centered), reduce, true);
  Tensor y = ops::divide(centered, ops::sqrt(ops::add(variance, options_.epsilon)));
  if (options_.scale) y = ops::multiply(y, ops::reshape(gamma_.value(), broadcast));
  if (options_.center) y = ops::add(y, ops::reshape(beta_.value(), broadcast));
  return {ops::reshape(y, s)};
}

std::vector<Shape> GroupNormalizationImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  return shapes;
}

json GroupNormalizationImpl::get_config() const {
  json c = base_config();
  c["groups"] = built() ? groups_ : options_.groups;
  c["axis"] = options_.axis;
  c["epsilon"] = options_.epsilon;
  c["center"] = options_.center;
  c["scale"] = options_.scale;
  c["beta_initializer"] = initializers::serialize(options_.beta_initializer.ptr());
  c["gamma_initializer"] = initializers::serialize(options_.gamma_initializer.ptr());
  c["beta_regularizer"] = regularizers::serialize(options_.beta_regularizer.ptr());
  c["gamma_regularizer"] = regularizers::serialize(options_.gamma_regularizer.ptr());
  c["beta_constraint"] = constraints::serialize(options_.beta_constraint.ptr());
  c["gamma_constraint"] = constraints::serialize(options_.gamma_constraint.ptr());
  return c;
}

GroupNormalizationOptions group_normalization_options_from_config(const json& c) {
  GroupNormalizationOptions o;
  config::read_base_keys(c, o);
  if (c.contains("groups") && c["groups"].is_number_integer()) o.groups = c["groups"].get<int64_t>();
  if (c.contains("axis")) {
    const json& a = c["axis"];
    if (a.is_number_integer()) o.axis = a.get<int64_t>();
    else if (a.is_array() && a.size() == 1 && a[0].is_number_integer()) o.axis = a[0].get<int64_t>();
    else fail<NotImplementedError>("GroupNormalization config 'axis'", "an int", a.dump());
  }
  if (c.contains("epsilon") && c["epsilon"].is_number()) o.epsilon = c["epsilon"].get<double>();
  o.center = c.value("center", true);
  o.scale = c.value("scale", true);
  if (c.contains("beta_initializer")) o.beta_initializer = initializers::from_config(c["beta_initializer"]);
  if (c.contains("gamma_initializer")) o.gamma_initializer = initializers::from_config(c["gamma_initializer"]);
  if (c.contains("beta_regularizer")) o.beta_regularizer = regularizers::from_config(c["beta_regularizer"]);
  if (c.contains("gamma_regularizer")) o.gamma_regularizer = regularizers::from_config(c["gamma_regularizer"]);
  if (c.contains("beta_constraint")) o.beta_constraint = constraints::from_config(c["beta_constraint"]);
  if (c.contains("gamma_constraint")) o.gamma_constraint = constraints::from_config(c["gamma_constraint"]);
  return o;
}

KERAS_REGISTER_LAYER(GroupNormalization, [](const json& c) -> LayerPtr {
  return std::make_shared<GroupNormalizationImpl>(group_normalization_options_from_config(c));
});

}  // namespace keras::layers
