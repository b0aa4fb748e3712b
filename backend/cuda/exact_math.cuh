// Separately rounded float/double arithmetic for device code. nvcc contracts a * b + c into one
// fused multiply-add by default, which rounds once where the CPU (plain SSE code) rounds twice;
// kernels that must reproduce the CPU's results bit for bit spell their products and sums with
// these. Division and sqrt are already correctly rounded in device code (no fast-math).
#pragma once
#include <cuda_runtime.h>

namespace keras::cuda::kernels {

__device__ inline float xmul(float a, float b) { return __fmul_rn(a, b); }
__device__ inline double xmul(double a, double b) { return __dmul_rn(a, b); }
__device__ inline float xadd(float a, float b) { return __fadd_rn(a, b); }
__device__ inline double xadd(double a, double b) { return __dadd_rn(a, b); }
__device__ inline float xsub(float a, float b) { return __fsub_rn(a, b); }
__device__ inline double xsub(double a, double b) { return __dsub_rn(a, b); }

}  // namespace keras::cuda::kernels
