#include "layers/normalization.h"

#include <algorithm>
#include <functional>

#include "backend/autodiff.h"
#include "backend/ops.h"
#include "layers/initializers.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {
namespace {

constexpr double kEpsilon = 1e-7;  // keras.backend.epsilon()

std::string value_shape_str(const NormalizationValue& v) { return v.given ? shape_str(v.shape) : "none"; }

// ---- config values: a number or a nested list ----

// The shape comes from the first path down the nesting; every other path must match it.
NormalizationValue value_from_json(const json& j, const std::string& where) {
  Shape shape;
  const json* p = &j;
  while (p->is_array()) {
    shape.push_back(static_cast<int64_t>(p->size()));
    if (p->empty()) break;
    p = &(*p)[0];
  }
  std::vector<double> values;
  std::function<void(const json&, size_t)> walk = [&](const json& node, size_t depth) {
    if (depth == shape.size()) {
      if (!node.is_number()) fail<ValueError>(where, "a number or a rectangular nested list of numbers", j.dump());
      values.push_back(node.get<double>());
      return;
    }
    if (!node.is_array() || static_cast<int64_t>(node.size()) != shape[depth])
      fail<ValueError>(where, "a number or a rectangular nested list of numbers", j.dump());
    for (const auto& e : node) walk(e, depth + 1);
  };
  walk(j, 0);
  return NormalizationValue(std::move(values), std::move(shape));
}

json value_to_json(const NormalizationValue& v) {
  if (v.shape.empty()) return v.values.at(0);
  size_t at = 0;
  std::function<json(size_t)> rec = [&](size_t depth) -> json {
    if (depth == v.shape.size()) return v.values.at(at++);
    json a = json::array();
    for (int64_t i = 0; i < v.shape[depth]; ++i) a.push_back(rec(depth + 1));
    return a;
  };
  return rec(0);
}

}  // namespace

NormalizationImpl::NormalizationImpl(NormalizationOptions options)
    : Layer(config::base_options(options)), options_(std::move(options)) {
  const auto& m = options_.mean;
  const auto& v = options_.variance;
  if (m.given != v.given)
    fail<ValueError>(where(), "mean and variance given together", "mean " + value_shape_str(m) + " and variance " + value_shape_str(v),
                     "Give both, or neither and call adapt().");
  if (!m.given) return;
  for (const auto* val : {&m, &v})
    if (static_cast<int64_t>(val->values.size()) != shape_numel(val->shape))
      fail<ValueError>(where(), std::to_string(shape_numel(val->shape)) + " values for shape " + shape_str(val->shape),
                       std::to_string(val->values.size()));
  if (m.shape != v.shape)
    fail<ValueError>(where(), "mean and variance of one shape", "mean " + shape_str(m.shape) + " and variance " + shape_str(v.shape));
  if (m.shape.size() > options_.axis.size())
    fail<ValueError>(where(), "a mean of rank <= " + std::to_string(options_.axis.size()) + " (the number of axes)",
                     "mean of shape " + shape_str(m.shape));
}

std::vector<int> NormalizationImpl::kept_axes(int64_t rank) const {
  std::vector<int> kept;
  for (int64_t a : options_.axis) kept.push_back(a < 0 ? static_cast<int>(a + rank) : static_cast<int>(a));
  std::sort(kept.begin(), kept.end());
  return kept;
}

Shape NormalizationImpl::broadcast_shape() const {
  Shape s = kept_extents_;
  for (auto& e : s)
    if (e < 0) e = 1;
  return s;
}

void NormalizationImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 1) fail<ShapeError>(where(), "one input", std::to_string(shapes.size()) + " inputs");
  const Shape& s = shapes[0];
  const auto rank = static_cast<int64_t>(s.size());
  for (int64_t a : options_.axis)
    if (a < -rank || a >= rank)
      fail<ShapeError>(where(), "axis values in [-rank, rank) of input " + shape_str(s), "axis " + std::to_string(a));
  std::vector<int> kept = kept_axes(rank);
  if (std::adjacent_find(kept.begin(), kept.end()) != kept.end())
    fail<ShapeError>(where(), "distinct axes", "axes repeating one of input " + shape_str(s));
  if (built() && rank != static_cast<int64_t>(kept_extents_.size()))
    fail<ShapeError>(where(), "an input of rank " + std::to_string(kept_extents_.size()) + " (as at build)", "shape " + shape_str(s));
  for (int d : kept) {
    if (s[d] < 0)
      fail<ShapeError>(where(), "a known extent on kept axis " + std::to_string(d), "shape " + shape_str(s));
    if (built() && s[d] != kept_extents_[d])
      fail<ShapeError>(where(), "extent " + std::to_string(kept_extents_[d]) + " on kept axis " + std::to_string(d) + " (as at build)",
                       "shape " + shape_str(s));
  }
}

void NormalizationImpl::build(const std::vector<Shape>& shapes) {
  const Shape& s = shapes[0];
  kept_extents_.assign(s.size(), -1);
  Shape kept_shape;
  for (int d : kept_axes(static_cast<int64_t>(s.size()))) {
    kept_extents_[d] = s[d];
    kept_shape.push_back(s[d]);
  }
  if (!options_.mean.given) {
    mean_ = add_weight("mean", kept_shape, std::make_shared<initializers::Zeros>(), false);
    variance_ = add_weight("variance", kept_shape, std::make_shared<initializers::Ones>(), false);
    count_ = add_weight("count", {}, std::make_shared<initializers::Zeros>(), false, nullptr, nullptr, DType::int64);
    return;
  }
  // Keras's rule: a number broadcasts everywhere; a list's axes align with the last kept axes.
  const Shape target = broadcast_shape();
  const std::vector<int> kept = kept_axes(static_cast<int64_t>(s.size()));
  Shape expanded(s.size(), 1);
  const Shape& ms = options_.mean.shape;
  for (size_t i = 1; i <= ms.size(); ++i) expanded[kept[kept.size() - i]] = ms[ms.size() - i];
  for (size_t d = 0; d < s.size(); ++d)
    if (expanded[d] != 1 && expanded[d] != target[d])
      fail<ValueError>(where(), "a mean and variance that broadcast onto the kept extents " + shape_str(kept_shape),
                       "shape " + shape_str(ms));
  const DType dt = compute_dtype();
  auto constant = [&](const NormalizationValue& v) {
    Tensor t = ops::cast(Tensor::from_vector<double>(v.values, expanded), dt);
    return ops::broadcast_to(t, target).contiguous();
  };
  NoGradGuard no_grad;
  given_mean_ = constant(options_.mean);
  given_variance_ = constant(options_.variance);
}

TensorList NormalizationImpl::call(const TensorList& inputs, const CallContext&) {
  const DType dt = compute_dtype();
  Tensor x = inputs[0].dtype() == dt ? inputs[0] : ops::cast(inputs[0], dt);
  Tensor mean = options_.mean.given ? given_mean_ : ops::cast(ops::reshape(mean_.value(), broadcast_shape()), dt);
  Tensor variance = options_.mean.given ? given_variance_ : ops::cast(ops::reshape(variance_.value(), broadcast_shape()), dt);
  Tensor scale = ops::maximum(ops::sqrt(variance), Tensor::scalar(kEpsilon, dt, x.device()));
  if (options_.invert) return {ops::add(mean, ops::multiply(x, scale))};
  return {ops::divide(ops::subtract(x, mean), scale)};
}

std::vector<Shape> NormalizationImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  return shapes;
}

std::vector<DType> NormalizationImpl::compute_output_dtype(const std::vector<DType>&) {
  return {compute_dtype()};
}

json NormalizationImpl::get_config() const {
  json c = base_config();
  c["axis"] = options_.axis;
  c["invert"] = options_.invert;
  c["mean"] = options_.mean.given ? value_to_json(options_.mean) : json(nullptr);
  c["variance"] = options_.variance.given ? value_to_json(options_.variance) : json(nullptr);
  return c;
}

NormalizationOptions normalization_options_from_config(const json& c) {
  NormalizationOptions o;
  config::read_base_keys(c, o);
  if (c.contains("axis")) {
    const json& a = c["axis"];
    if (a.is_null()) {
      o.axis.clear();
    } else if (a.is_number_integer()) {
      o.axis = {a.get<int64_t>()};
    } else if (a.is_array() && std::all_of(a.begin(), a.end(), [](const json& e) { return e.is_number_integer(); })) {
      o.axis = a.get<std::vector<int64_t>>();
    } else {
      fail<ValueError>("Normalization config 'axis'", "an int, a list of ints or null", a.dump());
    }
  }
  o.invert = c.value("invert", false);
  if (c.contains("mean") && !c["mean"].is_null()) o.mean = value_from_json(c["mean"], "Normalization config 'mean'");
  if (c.contains("variance") && !c["variance"].is_null())
    o.variance = value_from_json(c["variance"], "Normalization config 'variance'");
  return o;
}

KERAS_REGISTER_LAYER(Normalization, [](const json& c) -> LayerPtr {
  return std::make_shared<NormalizationImpl>(normalization_options_from_config(c));
});

}  // namespace keras::layers
