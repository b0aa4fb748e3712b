#include "layers/dot.h"

#include "backend/ops.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

namespace {
std::string axes_str(const DotAxes& a) {
  return a.pair ? "[" + std::to_string(a.first) + ", " + std::to_string(a.second) + "]" : std::to_string(a.first);
}

// x / max(||x||_2, 1e-7) along `axis`, written as x / sqrt(max(sum(x^2), 1e-14)) so the gradient
// stays finite for a zero vector (keras.ops.normalize clamps the inverse norm the same way).
Tensor l2_normalize(const Tensor& x, int axis) {
  Tensor ss = ops::sum(ops::square(x), {axis}, true);
  Tensor floor = Tensor::scalar(1e-14, x.dtype(), x.device());
  return ops::divide(x, ops::sqrt(ops::maximum(ss, floor)));
}

int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}
}  // namespace

DotImpl::DotImpl(DotOptions options) : MergeImpl(config::base_options(options)), options_(std::move(options)) {
  if (!options_.axes.set)
    fail<ValueError>(where(), "an `axes` argument (an int or a pair)", "none", "For example Dot({.axes = 1}).");
}

std::pair<int, int> DotImpl::resolved_axes(int64_t r1, int64_t r2) const {
  const auto& a = options_.axes;
  auto resolve = [](int axis, int64_t rank) { return static_cast<int>(axis < 0 ? axis + rank : axis); };
  return {resolve(a.first, r1), resolve(a.second, r2)};
}

void DotImpl::validate_input(const std::vector<Shape>& shapes) const {
  check_input_count(shapes);
  common_batch(shapes);
  const std::string axes = "axes " + axes_str(options_.axes);
  const Shape &s1 = shapes[0], &s2 = shapes[1];
  if (s1.size() < 2 || s2.size() < 2)
    fail<ShapeError>(where(), "two inputs of rank >= 2 (batch, ...)", "shapes " + shapes_str(shapes));
  auto [a1, a2] = resolved_axes(static_cast<int64_t>(s1.size()), static_cast<int64_t>(s2.size()));
  const int r1 = static_cast<int>(s1.size()), r2 = static_cast<int>(s2.size());
  if (a1 < 0 || a1 >= r1 || a2 < 0 || a2 >= r2)
    fail<ShapeError>(where(), "axes within the inputs' ranks", axes + " for shapes " + shapes_str(shapes));
  if (a1 == 0 || a2 == 0)
    fail<ShapeError>(where(), "axes other than the batch axis 0", axes + " for shapes " + shapes_str(shapes),
                     "Dot is a batch dot product; add a batch axis to unbatched inputs.");
  const int64_t d1 = s1[static_cast<size_t>(a1)], d2 = s2[static_cast<size_t>(a2)];
  if (d1 >= 0 && d2 >= 0 && d1 != d2)
    fail<ShapeError>(where(), "equal extents on the contracted " + axes,
                     std::to_string(d1) + " (axis " + std::to_string(a1) + ") and " + std::to_string(d2) + " (axis " +
                         std::to_string(a2) + ") for shapes " + shapes_str(shapes));
}

std::vector<Shape> DotImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  auto [a1, a2] = resolved_axes(static_cast<int64_t>(shapes[0].size()), static_cast<int64_t>(shapes[1].size()));
  Shape out{common_batch(shapes)};
  for (size_t i = 1; i < shapes[0].size(); ++i)
    if (static_cast<int>(i) != a1) out.push_back(shapes[0][i]);
  for (size_t i = 1; i < shapes[1].size(); ++i)
    if (static_cast<int>(i) != a2) out.push_back(shapes[1][i]);
  if (out.size() == 1) out.push_back(1);
  return {out};
}

TensorList DotImpl::call(const TensorList& inputs, const CallContext&) {
  check_same_dtypes({inputs[0].dtype(), inputs[1].dtype()});
  return {merge_function(inputs)};
}

// As a matmul: x1 -> (batch, P, K) with the contracted axis last, x2 -> (batch, K, Q) with it
// first, then (batch, P, Q) reshaped to the kept extents of both.
Tensor DotImpl::merge_function(const TensorList& inputs) const {
  Tensor x1 = inputs[0], x2 = inputs[1];
  const int r1 = x1.rank(), r2 = x2.rank();
  auto [a1, a2] = resolved_axes(r1, r2);
  if (options_.normalize) {
    x1 = l2_normalize(x1, a1);
    x2 = l2_normalize(x2, a2);
  }
  std::vector<int> p1{0}, p2{0, a2};
  for (int i = 1; i < r1; ++i)
    if (i != a1) p1.push_back(i);
  p1.push_back(a1);
  for (int i = 1; i < r2; ++i)
    if (i != a2) p2.push_back(i);
  auto is_identity = [](const std::vector<int>& p) {
    for (size_t i = 0; i < p.size(); ++i)
      if (p[i] != static_cast<int>(i)) return false;
    return true;
  };
  if (!is_identity(p1)) x1 = ops::transpose(x1, p1);
  if (!is_identity(p2)) x2 = ops::transpose(x2, p2);
  const Shape s1 = x1.shape(), s2 = x2.shape();
  const int64_t batch = s1[0], k = s1.back();
  Tensor m1 = ops::reshape(x1, {batch, product(s1, 1, s1.size() - 1), k});
  Tensor m2 = ops::reshape(x2, {s2[0], k, product(s2, 2, s2.size())});
  Tensor out = ops::matmul(m1, m2);
  Shape out_shape{batch};
  out_shape.insert(out_shape.end(), s1.begin() + 1, s1.end() - 1);
  out_shape.insert(out_shape.end(), s2.begin() + 2, s2.end());
  if (out_shape.size() == 1) out_shape.push_back(1);
  return ops::reshape(out, out_shape);
}

json DotImpl::get_config() const {
  json c = base_config();
  const auto& a = options_.axes;
  c["axes"] = a.pair ? json::array({a.first, a.second}) : json(a.first);
  c["normalize"] = options_.normalize;
  return c;
}

KerasTensor dot(const std::vector<KerasTensor>& inputs, DotOptions options) {
  Dot layer(std::move(options));
  return (*layer)(inputs)[0];
}

DotOptions dot_options_from_config(const json& c) {
  DotOptions o;
  config::read_base_keys(c, o);
  if (!c.contains("axes")) fail<ValueError>("Dot config", "an 'axes' entry", "none");
  const json& a = c["axes"];
  if (a.is_number_integer()) {
    o.axes = DotAxes(a.get<int>());
  } else if (a.is_array() && a.size() == 2 && a[0].is_number_integer() && a[1].is_number_integer()) {
    o.axes = DotAxes(a[0].get<int>(), a[1].get<int>());
  } else {
    fail<ValueError>("Dot config", "'axes' as an int or a list of two ints", a.dump());
  }
  o.normalize = c.value("normalize", false);
  return o;
}

KERAS_REGISTER_LAYER(Dot, [](const json& c) -> LayerPtr { return std::make_shared<DotImpl>(dot_options_from_config(c)); });

}  // namespace keras::layers
