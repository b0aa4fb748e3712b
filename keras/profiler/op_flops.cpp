#include "keras/profiler/op_flops.h"

namespace keras::profiler {
namespace {

double numel(const Shape& s) {
  double n = 1;
  for (int64_t d : s) n *= static_cast<double>(d);
  return n;
}

// A convolution output element (or an element of dy) takes kh*kw*in/groups multiply-adds, the
// kernel's elements per output channel; kernels are (kh, kw, in/groups, out).
double conv_flops(const Shape& out_or_dy, const Shape& kernel) {
  if (kernel.size() != 4 || kernel[3] <= 0) return 0;
  return 2 * numel(out_or_dy) * numel(kernel) / static_cast<double>(kernel[3]);
}

}  // namespace

double op_flops(const std::string& op, const TensorList& in, const TensorList& out, const Attrs& attrs) {
  if (out.empty() || !out[0].defined()) return 0;
  if (op == "matmul" && in.size() >= 2) {
    const Shape& a = in[0].shape();
    if (a.size() < 2) return 0;
    const int64_t k = attrs.get_bool("transpose_a", false) ? a[a.size() - 2] : a.back();
    return 2 * numel(out[0].shape()) * static_cast<double>(k);
  }
  if (op == "dense" && in.size() >= 2 && in[1].rank() == 2)
    return 2 * numel(out[0].shape()) * static_cast<double>(in[1].shape()[0]);
  if (op == "conv2d" && in.size() >= 2) return conv_flops(out[0].shape(), in[1].shape());
  if (op == "conv2d_backward_data" && in.size() >= 2) return conv_flops(in[0].shape(), in[1].shape());
  if (op == "conv2d_backward_weights" && in.size() >= 2 && attrs.has("kernel_shape")) {
    const std::vector<int64_t>& k = attrs.get_ints("kernel_shape");
    return conv_flops(in[1].shape(), Shape(k.begin(), k.end()));
  }
  return 0;
}

}  // namespace keras::profiler
