// keras::ops for image and normalization layers: pooling, batch/layer normalization, resizing,
// padding and spatial dropout. Images are NHWC (channels_last), as Keras stores them.
//
// Pooling and batch normalization are registered ops with oneDNN kernels on the CPU and
// plain-loop references (backend/cpu/pool_reference.h, backend/cpu/norm_reference.h); bilinear
// resizing is a registered op with plain loops; the rest are compositions of keras::ops, so their
// gradients come from the ops they are made of.
#pragma once
#include <array>
#include <string>

#include "backend/ops.h"

namespace keras::ops {

using Size2 = std::array<int64_t, 2>;  // (height, width)

// Output extent and padding of a pooling window over one spatial axis set, as Keras/TF compute
// them: "valid" -> floor((in - pool) / stride) + 1, no padding; "same" -> ceil(in / stride), with
// the odd extra pad at the bottom/right.
struct Pool2DGeometry {
  int64_t out_h = 0, out_w = 0;
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
};
// Throws ValueError (naming `where`) for pool sizes or strides < 1 or an unknown padding, and
// ShapeError for a "valid" window larger than the input. Unknown extents (-1) give -1.
Pool2DGeometry pool2d_geometry(int64_t in_h, int64_t in_w, Size2 pool_size, Size2 strides,
                               const std::string& padding, const std::string& where);
// (N, H, W, C) -> (N, OH, OW, C); ShapeError naming `where` for a rank other than 4.
Shape pool2d_output_shape(const Shape& x, Size2 pool_size, Size2 strides, const std::string& padding,
                          const std::string& where);

// Max pooling of x (N, H, W, C) float32/float64. Padded positions never win. The backward reads
// the argmax position within each window that the forward kept (oneDNN's workspace).
Tensor max_pool2d(const Tensor& x, Size2 pool_size, Size2 strides, const std::string& padding = "valid");
// Average pooling; with "same" padding the padded positions are not counted (as Keras/TF).
Tensor avg_pool2d(const Tensor& x, Size2 pool_size, Size2 strides, const std::string& padding = "valid");

// Batch normalization with the statistics of this batch over every axis but the last:
// x (..., C), gamma and beta (C,) (undefined = 1 and 0). Returns y and the batch mean and
// biased variance (C,), as Keras's ops.moments. mean/variance carry no gradient; y is
// differentiable in x, gamma and beta. ShapeError for mismatched extents.
struct BatchNormOutputs {
  Tensor y, mean, variance;
};
BatchNormOutputs batch_norm_training(const Tensor& x, const Tensor& gamma, const Tensor& beta, double epsilon);
// (x - mean) / sqrt(variance + epsilon) * gamma + beta over the last axis, with given statistics
// (moving statistics at inference). gamma/beta may be undefined. Differentiable in all inputs.
Tensor batch_norm_inference(const Tensor& x, const Tensor& mean, const Tensor& variance, const Tensor& gamma,
                            const Tensor& beta, double epsilon);
// Layer normalization over the last axis (biased variance, as Keras); gamma/beta (C,) may be
// undefined.
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double epsilon);

// Nearest-neighbour upsampling of x (N, H, W, C) by integer factors: out[i] = x[i / size].
Tensor upsample_nearest2d(const Tensor& x, Size2 size);
// Bilinear resize of x (N, H, W, C) to (N, out_h, out_w, C) with half-pixel centres and edge
// clamping (tf.image.resize / keras.ops.image.resize "bilinear", no antialiasing).
Tensor resize_bilinear2d(const Tensor& x, Size2 out_size);
// Zero padding / cropping of the H and W axes of x (N, H, W, C): {{top, bottom}, {left, right}}.
// ValueError for negative amounts; ShapeError when cropping removes everything.
Tensor zero_pad2d(const Tensor& x, std::array<Size2, 2> padding);
Tensor crop2d(const Tensor& x, std::array<Size2, 2> cropping);

// Dropout of whole channels: x (N, ..., C); one keep decision per (n, c), kept channels scaled
// by 1/(1-rate). rate in [0, 1) (ValueError otherwise); masks drawn from `gen`.
Tensor spatial_dropout(const Tensor& x, double rate, Generator& gen);
// Inverted dropout with shared decisions (keras.layers.Dropout's noise_shape): one keep decision
// per element of `noise_shape`, broadcast over x; kept values scaled by 1/(1-rate). noise_shape
// has x's rank and each extent is 1 or x's extent (ShapeError otherwise); (N, 1, 1, 1) keeps or
// drops whole samples. rate in [0, 1) (ValueError otherwise); x floating (TypeError otherwise);
// the mask is uniform(noise_shape) >= rate, drawn from `gen`.
Tensor dropout_with_noise_shape(const Tensor& x, double rate, const Shape& noise_shape, Generator& gen);

}  // namespace keras::ops
