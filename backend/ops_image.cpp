// Op definitions of resize_nearest (+ its gradient) and affine_transform; CPU kernels in
// backend/cpu/image_transform_kernels.cpp.
//
//   resize_nearest(x) -> y                  attr size (out_h, out_w)
//   resize_nearest_grad(grad) -> dx         attrs size, input_shape
//   affine_transform(images, transforms)    attrs interpolation, fill_mode, fill_value
#include "backend/ops_image.h"
#include "backend/resize_op_defs.h"

namespace keras {
namespace {

void check_choice(const std::string& where, const std::string& what, const std::string& value,
                  std::initializer_list<const char*> allowed) {
  std::string list;
  for (const char* v : allowed) {
    if (value == v) return;
    list += (list.empty() ? "'" : ", '") + std::string(v) + "'";
  }
  fail<ValueError>(where, what + " one of " + list, "'" + value + "'");
}

}  // namespace

KERAS_REGISTER_OP(resize_nearest) { detail::define_resize_op(def, "resize_nearest_grad"); }

// Linear in grad; its adjoint is the forward resize.
KERAS_REGISTER_OP(resize_nearest_grad) { detail::define_resize_grad_op(def, "resize_nearest"); }

KERAS_REGISTER_OP(affine_transform) {
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs& a) {
    const std::string where = "op 'affine_transform'";
    if (in.size() != 2) fail<ValueError>(where, "2 inputs (images, transforms)", std::to_string(in.size()) + " inputs");
    detail::check_image_spec(where, in[0]);
    const Shape& t = in[1].shape;
    if (in[1].dtype != DType::float32)
      fail<TypeError>(where, "float32 transforms", dtype_name(in[1].dtype), "keras::ops::affine_transform casts them.");
    if (t.size() != 2 || t[1] != 8 || (t[0] != 1 && t[0] != in[0].shape[0] && in[0].shape[0] >= 0))
      fail<ValueError>(where, "transforms of shape (1, 8) or (" + std::to_string(in[0].shape[0]) + ", 8)",
                       "shape " + shape_str(t), "One row [a0, a1, a2, b0, b1, b2, c0, c1] per image.");
    check_choice(where, "interpolation", a.get_string("interpolation"), {"nearest", "bilinear"});
    check_choice(where, "fill_mode", a.get_string("fill_mode"), {"reflect", "wrap", "constant", "nearest"});
    return std::vector<TensorSpec>{in[0]};
  };
}

namespace ops {

Tensor resize_nearest2d(const Tensor& x, Size2 out) {
  static const OpDef& def = OpRegistry::instance().find("resize_nearest");
  return run_op1(def, {x}, Attrs{{"size", std::vector<int64_t>{out[0], out[1]}}});
}

Tensor affine_transform(const Tensor& images, const Tensor& transforms, const std::string& interpolation,
                        const std::string& fill_mode, double fill_value) {
  static const OpDef& def = OpRegistry::instance().find("affine_transform");
  Tensor t = transforms.rank() == 1 ? reshape(transforms, {1, transforms.dim(0)}) : transforms;
  if (t.dtype() != DType::float32) t = cast(t, DType::float32);
  return run_op1(def, {images, t.detach()},
                 Attrs{{"interpolation", interpolation}, {"fill_mode", fill_mode}, {"fill_value", fill_value}});
}

}  // namespace ops
}  // namespace keras
