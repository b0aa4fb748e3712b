// CUDA kernels of resize_bilinear, resize_bilinear_grad, resize_nearest, resize_nearest_grad
// (definitions: backend/ops_spatial.cpp, backend/ops_image.cpp, backend/resize_op_defs.cpp) and
// affine_transform (backend/ops_image.cpp). Images are NHWC float32/float64, contiguous;
// shapes, dtypes and attrs are validated by the shape functions. The gradients are gathers, so
// they are deterministic and need no zeroing of the output first.
#include <string>

#include "backend/cuda/runtime.h"
#include "backend/cuda/train_kernels.h"
#include "backend/cuda/op_checks.h"
#include "backend/op_registry.h"

namespace keras {
namespace {

using cuda::require_float;
using cuda::require_numeric;
using cuda::stream_of;

namespace k = cuda::kernels;


// Dims from the full-resolution tensor `image` (N, H, W, C) and the resized one `resized`.
k::ImageDims dims(const Tensor& image, const Tensor& resized) {
  return {image.dim(0), image.dim(1), image.dim(2), image.dim(3), resized.dim(1), resized.dim(2)};
}

using Launcher = void (*)(DType, const void*, void*, const k::ImageDims&, cudaStream_t);

// Forward: in[0] is the image, out[0] the resized one; gradient: in[0] is the resized
// gradient, out[0] the image's.
template <Launcher launch, bool grad>
void resize_cuda(const TensorList& in, TensorList& out, const Attrs&, const char* op) {
  require_float(in[0], op);
  if (out[0].numel() == 0) return;
  const int dev = in[0].device().index;
  cuda::DeviceGuard guard(dev);
  const k::ImageDims d = grad ? dims(out[0], in[0]) : dims(in[0], out[0]);
  launch(in[0].dtype(), in[0].raw_data(), out[0].raw_data(), d, cuda::stream(dev));
  cuda::check_launch(op);
}

void bilinear_cuda(const TensorList& in, TensorList& out, const Attrs& a) {
  resize_cuda<k::resize_bilinear, false>(in, out, a, "resize_bilinear (cuda)");
}
void bilinear_grad_cuda(const TensorList& in, TensorList& out, const Attrs& a) {
  resize_cuda<k::resize_bilinear_grad, true>(in, out, a, "resize_bilinear_grad (cuda)");
}
void nearest_cuda(const TensorList& in, TensorList& out, const Attrs& a) {
  resize_cuda<k::resize_nearest, false>(in, out, a, "resize_nearest (cuda)");
}
void nearest_grad_cuda(const TensorList& in, TensorList& out, const Attrs& a) {
  resize_cuda<k::resize_nearest_grad, true>(in, out, a, "resize_nearest_grad (cuda)");
}

int fill_mode(const std::string& s) {
  if (s == "reflect") return 0;
  if (s == "wrap") return 1;
  if (s == "nearest") return 3;
  return 2;  // constant (the shape function admits nothing else)
}

void affine_cuda(const TensorList& in, TensorList& out, const Attrs& a) {
  require_float(in[0], "affine_transform");
  if (out[0].numel() == 0) return;
  const int dev = in[0].device().index;
  cuda::DeviceGuard guard(dev);
  const Tensor& x = in[0];
  k::affine_transform(x.dtype(), x.raw_data(), static_cast<const float*>(in[1].raw_data()), in[1].dim(0) == 1,
                      out[0].raw_data(), x.dim(0), x.dim(1), x.dim(2), x.dim(3), fill_mode(a.get_string("fill_mode")),
                      a.get_string("interpolation") == "bilinear", a.get_float("fill_value"), cuda::stream(dev));
  cuda::check_launch("affine_transform (cuda)");
}

}  // namespace

KERAS_REGISTER_KERNEL(resize_bilinear, cuda, bilinear_cuda);
KERAS_REGISTER_KERNEL(resize_bilinear_grad, cuda, bilinear_grad_cuda);
KERAS_REGISTER_KERNEL(resize_nearest, cuda, nearest_cuda);
KERAS_REGISTER_KERNEL(resize_nearest_grad, cuda, nearest_grad_cuda);
KERAS_REGISTER_KERNEL(affine_transform, cuda, affine_cuda);

}  // namespace keras
