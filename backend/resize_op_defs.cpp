#include "backend/resize_op_defs.h"

namespace keras::detail {

void check_image_spec(const std::string& where, const TensorSpec& x) {
  if (!is_floating(x.dtype)) fail<TypeError>(where, "a floating-point input", dtype_name(x.dtype), "Cast the tensor first.");
  if (x.shape.size() != 4)
    fail<ShapeError>(where, "an input of rank 4 (batch, height, width, channels)", "shape " + shape_str(x.shape));
}

std::vector<int64_t> resize_out_size(const Attrs& a, const std::string& where) {
  const auto& s = a.get_ints("size");
  if (s.size() != 2 || s[0] < 1 || s[1] < 1) fail<ValueError>(where, "attr size of 2 positive extents", a.str());
  return s;
}

void define_resize_op(OpDef& def, const std::string& grad_name) {
  def.shape = [name = def.name](const std::vector<TensorSpec>& in, const Attrs& a) {
    const std::string where = "op '" + name + "'";
    if (in.size() != 1) fail<ValueError>(where, "1 input", std::to_string(in.size()) + " inputs");
    check_image_spec(where, in[0]);
    auto s = resize_out_size(a, where);
    return std::vector<TensorSpec>{{{in[0].shape[0], s[0], s[1], in[0].shape[3]}, in[0].dtype}};
  };
  def.grad = [grad_name](const GradContext& g) {
    Attrs a = g.attrs;
    a.set("input_shape", std::vector<int64_t>(g.input_specs[0].shape.begin(), g.input_specs[0].shape.end()));
    return TensorList{run_op1(OpRegistry::instance().find(grad_name), {g.grad_outputs[0]}, a)};
  };
}

void define_resize_grad_op(OpDef& def, const std::string& forward_name) {
  def.shape = [name = def.name](const std::vector<TensorSpec>& in, const Attrs& a) {
    const std::string where = "op '" + name + "'";
    if (in.size() != 1) fail<ValueError>(where, "1 input", std::to_string(in.size()) + " inputs");
    check_image_spec(where, in[0]);
    auto s = resize_out_size(a, where);
    const auto& is = a.get_ints("input_shape");
    Shape input(is.begin(), is.end());
    if (input.size() != 4 || in[0].shape != Shape{input[0], s[0], s[1], input[3]})
      fail<ShapeError>(where, "a gradient of the resized shape of " + shape_str(input), shape_str(in[0].shape));
    return std::vector<TensorSpec>{{input, in[0].dtype}};
  };
  def.grad = [forward_name](const GradContext& g) {
    return TensorList{run_op1(OpRegistry::instance().find(forward_name), {g.grad_outputs[0]},
                              Attrs{{"size", g.attrs.get_ints("size")}})};
  };
}

}  // namespace keras::detail
