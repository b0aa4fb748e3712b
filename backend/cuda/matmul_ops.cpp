// CUDA kernels of matmul, dense and dense_activation_grad: cuBLAS GEMMs (float32 in TF32 where
// cuda::allow_tf32(), else exact float32; float64), and for dense a fused bias + activation pass.
//
// Tensors are row-major and cuBLAS is column-major: a row-major (m x n) C is a column-major
// (n x m) C^T, so C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T, B first.
#include <string>
#include <vector>

#include "backend/cuda.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/runtime.h"
#include "backend/op_registry.h"

namespace keras {
namespace {

using cuda::DeviceGuard;
namespace k = cuda::kernels;

// One row-major GEMM problem (possibly batched with element strides between matrices;
// stride 0 = the same matrix for every batch entry).
struct Gemm {
  int64_t m = 0, n = 0, k = 0;
  bool ta = false, tb = false;
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0, batch = 1;
};

void run_gemm(const Gemm& g, DType dtype, int device, const char* where) {
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  cublasHandle_t h = cuda::cublas_handle(device);
  if (g.m > INT32_MAX || g.n > INT32_MAX || g.k > INT32_MAX || g.batch > INT32_MAX)
    fail<NotImplementedError>(where, "GEMM extents below 2^31", std::to_string(g.m) + " x " + std::to_string(g.k) +
                                                                    " x " + std::to_string(g.n));
  const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), kk = static_cast<int>(g.k);
  // Leading dimensions of the row-major storage: the stored row length.
  const int lda = g.ta ? m : kk, ldb = g.tb ? kk : n, ldc = n;
  const cublasOperation_t op_a = g.ta ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = g.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int batch = static_cast<int>(g.batch);
  if (dtype == DType::float32) {
    const float alpha = 1.f, beta = 0.f;
    cublasComputeType_t compute = cuda::allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    cuda::check_cublas(cuda::cublas().gemm_strided_batched_ex(h, op_b, op_a, n, m, kk, &alpha, g.b, CUDA_R_32F, ldb, g.stride_b,
                                                  g.a, CUDA_R_32F, lda, g.stride_a, &beta, g.c, CUDA_R_32F, ldc,
                                                  g.stride_c, batch, compute, CUBLAS_GEMM_DEFAULT),
                       where);
  } else if (dtype == DType::float64) {
    const double alpha = 1.0, beta = 0.0;
    cuda::check_cublas(cuda::cublas().gemm_strided_batched_ex(h, op_b, op_a, n, m, kk, &alpha, g.b, CUDA_R_64F, ldb, g.stride_b,
                                                  g.a, CUDA_R_64F, lda, g.stride_a, &beta, g.c, CUDA_R_64F, ldc,
                                                  g.stride_c, batch, CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT),
                       where);
  } else {
    fail<TypeError>(where, "float32 or float64", dtype_name(dtype));
  }
}

Shape batch_of(const Shape& s, size_t rank) {
  Shape b(rank - s.size(), 1);
  b.insert(b.end(), s.begin(), s.end() - 2);
  return b;
}

// Matrix offset (in matrices) of an operand with batch shape `ob` for output batch index t.
int64_t matrix_offset(const Shape& ob, const Shape& cb, int64_t t) {
  Shape st = contiguous_strides(ob);
  int64_t off = 0;
  for (size_t d = cb.size(); d-- > 0;) {
    int64_t i = t % cb[d];
    t /= cb[d];
    if (ob[d] != 1) off += i * st[d];
  }
  return off;
}

void matmul_kernel(const TensorList& in, TensorList& out, const Attrs& attrs) {
  const Tensor& a = in[0];
  const Tensor& b = in[1];
  Tensor& c = out[0];
  const int device = c.device().index;
  DeviceGuard guard(device);
  bool ta = attrs.get_bool("transpose_a", false), tb = attrs.get_bool("transpose_b", false);
  const Shape& cs = c.shape();
  size_t rank = cs.size();
  int64_t m = cs[rank - 2], n = cs[rank - 1];
  int64_t kk = ta ? a.shape()[a.rank() - 2] : a.shape().back();
  if (c.numel() == 0) return;
  if (kk == 0) {
    k::fill(c.dtype(), c.raw_data(), c.numel(), 0.0, cuda::stream(device));
    cuda::check_launch("matmul (cuda)");
    return;
  }
  Shape ab = batch_of(a.shape(), rank), bb = batch_of(b.shape(), rank), cb(cs.begin(), cs.end() - 2);
  const int64_t batches = shape_numel(cb), es = static_cast<int64_t>(dtype_size(c.dtype()));
  Gemm g;
  g.m = m, g.n = n, g.k = kk, g.ta = ta, g.tb = tb;
  if (shape_numel(bb) == 1 && !ta) {
    // Every batch matrix of a meets the same b: fold the batch into the rows (one GEMM).
    g.m = batches * m;
    g.a = a.raw_data(), g.b = b.raw_data(), g.c = c.raw_data();
    run_gemm(g, c.dtype(), device, "matmul (cuda)");
    return;
  }
  // Strided batched when each operand's batch offsets form a progression (full or broadcast);
  // otherwise (mixed broadcasting such as (2,1) x (1,3)) one GEMM per batch entry.
  auto progression = [&](const Shape& ob, int64_t& step) {
    step = batches > 1 ? matrix_offset(ob, cb, 1) : 0;
    for (int64_t t = 0; t < batches; ++t)
      if (matrix_offset(ob, cb, t) != t * step) return false;
    return true;
  };
  int64_t sa = 0, sb = 0;
  const int64_t size_a = m * kk, size_b = kk * n, size_c = m * n;
  if (progression(ab, sa) && progression(bb, sb)) {
    g.a = a.raw_data(), g.b = b.raw_data(), g.c = c.raw_data();
    g.stride_a = sa * size_a, g.stride_b = sb * size_b, g.stride_c = size_c, g.batch = batches;
    run_gemm(g, c.dtype(), device, "matmul (cuda)");
    return;
  }
  for (int64_t t = 0; t < batches; ++t) {
    g.a = static_cast<const char*>(a.raw_data()) + matrix_offset(ab, cb, t) * size_a * es;
    g.b = static_cast<const char*>(b.raw_data()) + matrix_offset(bb, cb, t) * size_b * es;
    g.c = static_cast<char*>(c.raw_data()) + t * size_c * es;
    run_gemm(g, c.dtype(), device, "matmul (cuda)");
  }
}

k::Act act_code(const std::string& act, bool with_grad, const char* where) {
  if (act == "linear") return k::Act::linear;
  if (act == "relu") return k::Act::relu;
  if (act == "sigmoid") return k::Act::sigmoid;
  if (act == "tanh") return k::Act::tanh;
  if (act == "elu") return k::Act::elu;
  if (!with_grad && act == "gelu") return k::Act::gelu;
  if (!with_grad && act == "swish") return k::Act::swish;
  fail<ValueError>(where, with_grad ? "relu, sigmoid, tanh or elu" : "a fusable activation (linear, relu, sigmoid, tanh, elu, gelu, swish)",
                   "'" + act + "'");
}

// x (..., in) @ kernel (in, units) [+ bias] then the fused activation.
void dense_kernel(const TensorList& in, TensorList& out, const Attrs& attrs) {
  const Tensor& x = in[0];
  const Tensor& w = in[1];
  Tensor& y = out[0];
  const int device = y.device().index;
  DeviceGuard guard(device);
  k::Act act = act_code(attrs.get_string("activation"), false, "dense (cuda)");
  int64_t kk = w.dim(0), units = w.dim(1);
  int64_t rows = units == 0 ? 0 : y.numel() / units;
  if (y.numel() == 0) return;
  cudaStream_t s = cuda::stream(device);
  if (kk == 0) {
    k::fill(y.dtype(), y.raw_data(), y.numel(), 0.0, s);
  } else {
    Gemm g;
    g.m = rows, g.n = units, g.k = kk;
    g.a = x.raw_data(), g.b = w.raw_data(), g.c = y.raw_data();
    run_gemm(g, y.dtype(), device, "dense (cuda)");
  }
  const void* bias = in.size() > 2 ? in[2].raw_data() : nullptr;
  if (bias || act != k::Act::linear) k::bias_activation(act, y.dtype(), y.raw_data(), bias, rows, units, s);
  cuda::check_launch("dense (cuda)");
}

// (dy, y) -> dz for the dense-fused activations.
void activation_grad_kernel(const TensorList& in, TensorList& out, const Attrs& attrs) {
  if (!is_floating(in[0].dtype()))
    fail<TypeError>("dense_activation_grad (cuda)", "float32 or float64", dtype_name(in[0].dtype()));
  DeviceGuard guard(in[0].device().index);
  k::Act act = act_code(attrs.get_string("activation"), true, "dense_activation_grad");
  k::activation_grad(act, in[0].dtype(), in[0].raw_data(), in[1].raw_data(), out[0].raw_data(), in[0].numel(),
                     cuda::stream(in[0].device().index));
  cuda::check_launch("dense_activation_grad (cuda)");
}

}  // namespace

KERAS_REGISTER_KERNEL(matmul, cuda, matmul_kernel);
KERAS_REGISTER_KERNEL(dense, cuda, dense_kernel);
KERAS_REGISTER_KERNEL(dense_activation_grad, cuda, activation_grad_kernel);

}  // namespace keras
