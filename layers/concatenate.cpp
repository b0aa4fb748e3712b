#include "layers/concatenate.h"

#include "backend/autodiff.h"
#include "backend/ops.h"
#include "layers/mask_ops.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

ConcatenateImpl::ConcatenateImpl(ConcatenateOptions options)
    : MergeImpl(config::base_options(options)), options_(std::move(options)) {}

void ConcatenateImpl::validate_input(const std::vector<Shape>& shapes) const {
  check_input_count(shapes);
  const std::string axis_str = "axis " + std::to_string(options_.axis);
  const int64_t rank = static_cast<int64_t>(shapes[0].size());
  for (const auto& s : shapes)
    if (static_cast<int64_t>(s.size()) != rank)
      fail<ShapeError>(where(), "inputs of one rank, matching except on " + axis_str, "shapes " + shapes_str(shapes));
  if (options_.axis >= rank || options_.axis < -rank)
    fail<ShapeError>(where(), "inputs of rank > " + std::to_string(options_.axis < 0 ? -options_.axis - 1 : options_.axis) +
                     " for " + axis_str, "shapes " + shapes_str(shapes));
  const int64_t axis = options_.axis < 0 ? options_.axis + rank : options_.axis;
  for (int64_t a = 0; a < rank; ++a) {
    if (a == axis) continue;
    int64_t known = -1;
    for (const auto& s : shapes) {
      const int64_t d = s[static_cast<size_t>(a)];
      if (d < 0) continue;
      if (known >= 0 && d != known)
        fail<ShapeError>(where(), "inputs with matching shapes except on the concatenation " + axis_str,
                         "shapes " + shapes_str(shapes),
                         "They differ on axis " + std::to_string(a) + ".");
      known = d;
    }
  }
}

std::vector<Shape> ConcatenateImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  const int64_t rank = static_cast<int64_t>(shapes[0].size());
  const size_t axis = static_cast<size_t>(options_.axis < 0 ? options_.axis + rank : options_.axis);
  Shape out(static_cast<size_t>(rank), -1);
  for (size_t a = 0; a < out.size(); ++a) {
    if (a == axis) {
      int64_t total = 0;
      for (const auto& s : shapes) total = (total < 0 || s[a] < 0) ? -1 : total + s[a];
      out[a] = total;
    } else {
      for (const auto& s : shapes)
        if (s[a] >= 0) out[a] = s[a];
    }
  }
  return {out};
}

TensorList ConcatenateImpl::call(const TensorList& inputs, const CallContext&) {
  std::vector<DType> dtypes;
  for (const auto& x : inputs) dtypes.push_back(x.dtype());
  check_same_dtypes(dtypes);
  return {merge_function(inputs)};
}

Tensor ConcatenateImpl::merge_function(const TensorList& inputs) const {
  return ops::concatenate(inputs, options_.axis);
}

TensorList ConcatenateImpl::compute_mask(const TensorList& inputs, const TensorList& masks) const {
  bool any_mask = false;
  for (const auto& m : masks) any_mask = any_mask || m.defined();
  if (!any_mask) return {Tensor()};
  NoGradGuard no_grad;
  TensorList wide;  // each input's mask as float32 {0, 1} of the input's shape
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& m = i < masks.size() ? masks[i] : Tensor();
    if (!m.defined()) wide.push_back(Tensor::ones(inputs[i].shape(), DType::float32, inputs[i].device()));
    else if (m.rank() < inputs[i].rank()) wide.push_back(ops::broadcast_to(ops::expand_dims(masks::as_float(m), -1), inputs[i].shape()));
    else wide.push_back(masks::as_float(m));
  }
  return {masks::any(ops::cast(ops::concatenate(wide, static_cast<int>(options_.axis)), DType::boolean), -1)};
}

json ConcatenateImpl::get_config() const {
  json c = base_config();
  c["axis"] = options_.axis;
  return c;
}

KerasTensor concatenate(const std::vector<KerasTensor>& inputs, ConcatenateOptions options) {
  Concatenate layer(std::move(options));
  return (*layer)(inputs)[0];
}

ConcatenateOptions concatenate_options_from_config(const json& c) {
  ConcatenateOptions o;
  config::read_base_keys(c, o);
  if (c.contains("axis")) {
    if (!c["axis"].is_number_integer())
      fail<ValueError>("Concatenate config", "an integer 'axis'", c["axis"].dump());
    o.axis = c["axis"].get<int>();
  }
  return o;
}

KERAS_REGISTER_LAYER(Concatenate, [](const json& c) -> LayerPtr {
  return std::make_shared<ConcatenateImpl>(concatenate_options_from_config(c));
});

}  // namespace keras::layers
