// Spatial ops on NHWC images: bilinear resizing (a registered op, CPU kernels in
// backend/cpu/resize_kernels.cpp), and nearest upsampling, zero padding, cropping, spatial
// dropout and dropout with a noise shape as compositions of keras::ops.
//
//   resize_bilinear(x) -> y           attr size (out_h, out_w)
//   resize_bilinear_grad(grad) -> dx  attrs size, input_shape
#include "backend/ops_nn.h"
#include "backend/resize_op_defs.h"

namespace keras {

KERAS_REGISTER_OP(resize_bilinear) { detail::define_resize_op(def, "resize_bilinear_grad"); }

// Linear in grad; its adjoint is the forward resize, so it has a gradient too.
KERAS_REGISTER_OP(resize_bilinear_grad) { detail::define_resize_grad_op(def, "resize_bilinear"); }

namespace ops {

Tensor upsample_nearest2d(const Tensor& x, Size2 size) {
  const std::string where = "keras::ops::upsample_nearest2d";
  detail::check_image_spec(where, {x.shape(), x.dtype()});
  if (size[0] < 1 || size[1] < 1)
    fail<ValueError>(where, "positive factors", "(" + std::to_string(size[0]) + ", " + std::to_string(size[1]) + ")");
  const Shape& s = x.shape();
  if (size[0] == 1 && size[1] == 1) return x;
  // (N, H, 1, W, 1, C) broadcast to (N, H, sh, W, sw, C): each pixel repeated, and the gradient
  // of broadcasting sums each block back.
  Tensor e = reshape(x, {s[0], s[1], 1, s[2], 1, s[3]});
  Tensor b = broadcast_to(e, {s[0], s[1], size[0], s[2], size[1], s[3]});
  return reshape(b, {s[0], s[1] * size[0], s[2] * size[1], s[3]});
}

Tensor resize_bilinear2d(const Tensor& x, Size2 out) {
  static const OpDef& def = OpRegistry::instance().find("resize_bilinear");
  return run_op1(def, {x}, Attrs{{"size", std::vector<int64_t>{out[0], out[1]}}});
}

Tensor zero_pad2d(const Tensor& x, std::array<Size2, 2> padding) {
  const std::string where = "keras::ops::zero_pad2d";
  detail::check_image_spec(where, {x.shape(), x.dtype()});
  for (const auto& p : padding)
    if (p[0] < 0 || p[1] < 0) fail<ValueError>(where, "non-negative padding", std::to_string(p[0]) + ", " + std::to_string(p[1]));
  Tensor y = x;
  for (int axis = 1; axis <= 2; ++axis) {
    const Size2& p = padding[axis - 1];
    if (p[0] == 0 && p[1] == 0) continue;
    TensorList parts;
    Shape edge = y.shape();
    if (p[0] > 0) edge[axis] = p[0], parts.push_back(Tensor::zeros(edge, x.dtype(), x.device()));
    parts.push_back(y);
    if (p[1] > 0) edge[axis] = p[1], parts.push_back(Tensor::zeros(edge, x.dtype(), x.device()));
    y = concatenate(parts, axis);
  }
  return y;
}

Tensor crop2d(const Tensor& x, std::array<Size2, 2> cropping) {
  const std::string where = "keras::ops::crop2d";
  if (x.rank() != 4)
    fail<ShapeError>(where, "an input of rank 4 (batch, height, width, channels)", "shape " + shape_str(x.shape()));
  const Shape& s = x.shape();
  for (int i = 0; i < 2; ++i) {
    if (cropping[i][0] < 0 || cropping[i][1] < 0)
      fail<ValueError>(where, "non-negative cropping", std::to_string(cropping[i][0]) + ", " + std::to_string(cropping[i][1]));
    if (cropping[i][0] + cropping[i][1] >= s[i + 1])
      fail<ShapeError>(where, "cropping that leaves at least one row and column",
                       "cropping ((" + std::to_string(cropping[0][0]) + ", " + std::to_string(cropping[0][1]) + "), (" +
                           std::to_string(cropping[1][0]) + ", " + std::to_string(cropping[1][1]) + ")) of input " +
                           shape_str(s));
  }
  return slice(x, {0, cropping[0][0], cropping[1][0], 0},
               {s[0], s[1] - cropping[0][0] - cropping[0][1], s[2] - cropping[1][0] - cropping[1][1], s[3]});
}

Tensor dropout_with_noise_shape(const Tensor& x, double rate, const Shape& noise_shape, Generator& gen) {
  const std::string where = "keras::ops::dropout_with_noise_shape";
  if (!(rate >= 0.0 && rate < 1.0)) fail<ValueError>(where, "a rate in [0, 1)", std::to_string(rate));
  if (!is_floating(x.dtype())) fail<TypeError>(where, "a floating-point input", dtype_name(x.dtype()));
  bool fits = noise_shape.size() == x.shape().size();
  for (size_t i = 0; fits && i < noise_shape.size(); ++i) fits = noise_shape[i] == 1 || noise_shape[i] == x.shape()[i];
  if (!fits)
    fail<ShapeError>(where, "a noise shape of the input's rank whose extents are 1 or the input's",
                     "noise shape " + shape_str(noise_shape) + " for input " + shape_str(x.shape()));
  if (rate == 0.0) return x;
  Tensor u = random::uniform(noise_shape, 0.0, 1.0, gen, x.dtype());
  Tensor keep = cast(greater_equal(u, Tensor::scalar(rate, x.dtype(), x.device())), x.dtype());
  return multiply(x, multiply(keep, 1.0 / (1.0 - rate)));
}

Tensor spatial_dropout(const Tensor& x, double rate, Generator& gen) {
  const std::string where = "keras::ops::spatial_dropout";
  if (!(rate >= 0.0 && rate < 1.0)) fail<ValueError>(where, "a rate in [0, 1)", std::to_string(rate));
  if (x.rank() < 2) fail<ShapeError>(where, "an input of rank >= 2 (batch, ..., channels)", "shape " + shape_str(x.shape()));
  if (!is_floating(x.dtype())) fail<TypeError>(where, "a floating-point input", dtype_name(x.dtype()));
  Shape mask_shape(x.rank(), 1);
  mask_shape.front() = x.shape().front();
  mask_shape.back() = x.shape().back();
  return dropout_with_noise_shape(x, rate, mask_shape, gen);
}

}  // namespace ops
}  // namespace keras
