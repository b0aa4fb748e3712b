// keras::ops for image preprocessing: nearest-neighbour resizing and Keras's affine image
// transform (keras.ops.image.affine_transform). Images are NHWC (channels_last). Both are
// registered ops with plain-loop CPU kernels (backend/cpu/image_transform_kernels.cpp).
#pragma once
#include <string>

#include "backend/ops_nn.h"

namespace keras::ops {

// Nearest-neighbour resize of x (N, H, W, C) float32/float64 to (N, out_h, out_w, C), as
// tf.image.resize "nearest" (half-pixel centres): output row o reads input row
// min(floor((o + 0.5) * H / out_h), H - 1), columns alike (the scale and the product in float32).
// Differentiable: the gradient of an input pixel is the sum over the output pixels that read it.
// ShapeError for a rank other than 4, ValueError for extents < 1.
Tensor resize_nearest2d(const Tensor& x, Size2 out_size);

// Keras 3's ops.image.affine_transform on the TensorFlow backend (ImageProjectiveTransformV3):
// images (N, H, W, C) float32/float64; transforms (N, 8) or (1, 8) (one for every image), any
// float dtype, used as float32. A row [a0, a1, a2, b0, b1, b2, c0, c1] maps each OUTPUT pixel
// (x, y) to the INPUT point ((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k), k = c0 x + c1 y + 1
// (k == 0 gives fill_value). Out-of-image points are first mapped by fill_mode:
//   "reflect"  (d c b a | a b c d | d c b a), reflecting about the edge of the last pixel;
//   "wrap"     (a b c d | a b c d | a b c d);
//   "nearest"  (a a a a | a b c d | d d d d), clamped into the image;
//   "constant" (k k k k | a b c d | k k k k), k = fill_value;
// then sampled with `interpolation` "nearest" (round half away from zero) or "bilinear" (taps
// outside the image read fill_value, as TensorFlow does). Output shape = images' shape.
// No gradient (Keras has none through random augmentation parameters; the images' gradient is
// not implemented either). ValueError for an unknown mode/interpolation or a transforms shape
// other than (N, 8)/(1, 8); ShapeError for images of rank other than 4.
Tensor affine_transform(const Tensor& images, const Tensor& transforms, const std::string& interpolation = "bilinear",
                        const std::string& fill_mode = "constant", double fill_value = 0.0);

}  // namespace keras::ops
