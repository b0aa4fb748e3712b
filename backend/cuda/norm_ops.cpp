// CUDA kernels of the batch-normalization ops (definitions and shape checks: backend/ops_norm.cpp;
// CPU kernels: backend/cpu/norm_kernels.cpp):
//   batch_moments(x) -> (mean, var)
//   batch_norm_train(x, gamma, beta, mean, var) -> y            attr epsilon
//   batch_norm_train_grad(grad, x, gamma, mean, var) -> (dx, dgamma, dbeta)   attr epsilon
//   batch_norm_inference(x, mean, var, gamma, beta) -> y        attr epsilon
// x is (..., C), channels last; inputs arrive contiguous and on one device, outputs pre-allocated
// by run_op. The shape functions have already rejected non-float dtypes and mismatched shapes.
#include "backend/cuda/norm_kernels.h"
#include "backend/cuda/runtime.h"
#include "backend/op_registry.h"

namespace keras {
namespace {

namespace k = cuda::kernels;

struct Problem {
  int64_t M = 0, C = 0;
};
Problem problem_of(const Tensor& x) {
  Problem p;
  p.C = x.rank() == 0 ? 1 : x.shape().back();
  p.M = p.C ? x.numel() / p.C : 0;
  return p;
}

// Scratch of the per-channel sums, through the caching allocator. Freeing it when the kernel
// function returns is safe: every later user of the block is queued after these kernels.
Tensor workspace(const Problem& p, Device device) {
  return Tensor::empty({k::batch_norm_workspace(p.M, p.C)}, DType::float64, device);
}

double* doubles(Tensor& t) { return static_cast<double*>(t.raw_data()); }

void apply(const Tensor& x, const Tensor& mean, const Tensor& var, const Tensor& gamma, const Tensor& beta,
           double epsilon, Tensor& y, const char* where) {
  const Problem p = problem_of(x);
  if (p.C == 0) return;
  cuda::DeviceGuard guard(x.device().index);
  Tensor ws = workspace(p, x.device());
  k::batch_norm_apply(x.dtype(), x.raw_data(), p.M, p.C, mean.raw_data(), var.raw_data(), gamma.raw_data(),
                      beta.raw_data(), epsilon, y.raw_data(), doubles(ws), cuda::stream(x.device().index));
  cuda::check_launch(where);
}

void batch_moments_cuda(const TensorList& in, TensorList& out, const Attrs&) {
  const Tensor& x = in[0];
  const Problem p = problem_of(x);
  if (p.C == 0) return;
  cuda::DeviceGuard guard(x.device().index);
  Tensor ws = workspace(p, x.device());
  k::batch_moments(x.dtype(), x.raw_data(), p.M, p.C, out[0].raw_data(), out[1].raw_data(), doubles(ws),
                   cuda::stream(x.device().index));
  cuda::check_launch("batch_moments (cuda)");
}

void batch_norm_train_cuda(const TensorList& in, TensorList& out, const Attrs& a) {
  apply(in[0], in[3], in[4], in[1], in[2], a.get_float("epsilon"), out[0], "batch_norm_train (cuda)");
}

void batch_norm_inference_cuda(const TensorList& in, TensorList& out, const Attrs& a) {
  apply(in[0], in[1], in[2], in[3], in[4], a.get_float("epsilon"), out[0], "batch_norm_inference (cuda)");
}

void batch_norm_train_grad_cuda(const TensorList& in, TensorList& out, const Attrs& a) {
  const Tensor &grad = in[0], &x = in[1], &gamma = in[2], &mean = in[3], &var = in[4];
  const Problem p = problem_of(x);
  if (p.C == 0) return;
  cuda::DeviceGuard guard(x.device().index);
  Tensor ws = workspace(p, x.device());
  k::batch_norm_backward(x.dtype(), grad.raw_data(), x.raw_data(), p.M, p.C, gamma.raw_data(), mean.raw_data(),
                         var.raw_data(), a.get_float("epsilon"), out[0].raw_data(), out[1].raw_data(),
                         out[2].raw_data(), doubles(ws), cuda::stream(x.device().index));
  cuda::check_launch("batch_norm_train_grad (cuda)");
}

}  // namespace

KERAS_REGISTER_KERNEL(batch_moments, cuda, batch_moments_cuda);
KERAS_REGISTER_KERNEL(batch_norm_train, cuda, batch_norm_train_cuda);
KERAS_REGISTER_KERNEL(batch_norm_train_grad, cuda, batch_norm_train_grad_cuda);
KERAS_REGISTER_KERNEL(batch_norm_inference, cuda, batch_norm_inference_cuda);

}  // namespace keras
