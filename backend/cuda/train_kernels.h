// Launchers of the training-side CUDA kernels: the fused optimizer updates
// (optimizer_kernels.cu), dropout (dropout_kernels.cu), the sparse softmax cross-entropy
// (loss_kernels.cu) and the image resizes / affine transform (resize_kernels.cu,
// affine_kernels.cu). Plain C++ interface so the registrations stay ordinary .cpp files.
// Pointers are device pointers; every launcher queues work on `stream` and returns without
// waiting (the label check of the cross-entropy excepted, see below). Element counts may be 0.
// Only float32/float64 data is handled; other dtypes are the caller's to reject.
//
// Every kernel reproduces the arithmetic of the CPU kernel of its op, step by step, with
// multiply-adds written as separately rounded operations (no FMA contraction), so that results
// match the CPU to the last bit where the CPU math library allows it.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/dtype.h"

namespace keras::cuda::kernels {

// ---- optimizer updates (optimizers/update_ops.cpp) ----

// The shared gradient pre-processing: g *= grad_scale, clip to [-clip, clip] when clip > 0,
// then var -= var * decay.
struct GradPrep {
  double grad_scale = 1.0, clip_value = 0.0, decay = 0.0;
};

// var, grad, m (null without momentum) of n elements.
void sgd_update(DType t, void* var, const void* grad, void* m, int64_t n, const GradPrep& prep, double lr,
                double momentum, bool nesterov, cudaStream_t stream);
// alpha: the bias-corrected step size, computed in double on the host as the CPU does.
// vhat null without amsgrad.
void adam_update(DType t, void* var, const void* grad, void* m, void* v, void* vhat, int64_t n, const GradPrep& prep,
                 double alpha, double beta_1, double beta_2, double epsilon, cudaStream_t stream);
// mom null without momentum, avg null unless centered.
void rmsprop_update(DType t, void* var, const void* grad, void* vel, void* mom, void* avg, int64_t n,
                    const GradPrep& prep, double lr, double rho, double momentum, double epsilon, cudaStream_t stream);
void adagrad_update(DType t, void* var, const void* grad, void* acc, int64_t n, const GradPrep& prep, double lr,
                    double epsilon, cudaStream_t stream);

// ---- dropout (backend/ops_dropout.cpp) ----

// Element i keeps when word i % 4 of philox4x32(seed, counter + i / 4) >= threshold;
// y = keep ? x * (T)(1 / (1 - rate)) : 0.
void dropout(DType t, const void* x, void* y, bool* mask, int64_t n, uint64_t seed, uint64_t counter,
             uint64_t threshold, double rate, cudaStream_t stream);
// d = mask ? g * (T)(1 / (1 - rate)) : 0.
void dropout_grad(DType t, const void* g, const bool* mask, void* d, int64_t n, double rate, cudaStream_t stream);

// ---- sparse softmax cross-entropy (losses/sparse_softmax_cross_entropy.cpp) ----

// Queues the search for the first label outside [0, classes): *position (one device int64)
// becomes its index, or n when all are in range. Label dtype int32 or int64. The caller copies
// the answer back (the op throws on a bad label, so it must wait for it).
void find_bad_label(DType label_t, const void* labels, int64_t n, int64_t classes, int64_t* position,
                    cudaStream_t stream);
// loss (n,), probs (n, c) from logits (n, c); labels must be in range.
void sparse_ce_forward(DType t, DType label_t, const void* logits, const void* labels, void* loss, void* probs,
                       int64_t n, int64_t c, cudaStream_t stream);
// dx = probs * g[row], minus g[row] at the label.
void sparse_ce_grad(DType t, DType label_t, const void* probs, const void* labels, const void* g, void* dx, int64_t n,
                    int64_t c, cudaStream_t stream);

// ---- image resizes and affine transform (backend/cpu/*resize*, image_transform_kernels.cpp) ----

struct ImageDims {
  int64_t n, h, w, c;  // input (N, H, W, C)
  int64_t oh, ow;      // output height, width
};
// Half-pixel bilinear resize x (n, h, w, c) -> y (n, oh, ow, c) and its adjoint (gathering,
// deterministic, no atomics): dx (n, h, w, c) from g (n, oh, ow, c).
void resize_bilinear(DType t, const void* x, void* y, const ImageDims& d, cudaStream_t stream);
void resize_bilinear_grad(DType t, const void* g, void* dx, const ImageDims& d, cudaStream_t stream);
// Nearest resize (TensorFlow's half-pixel float rule) and its gathering adjoint.
void resize_nearest(DType t, const void* x, void* y, const ImageDims& d, cudaStream_t stream);
void resize_nearest_grad(DType t, const void* g, void* dx, const ImageDims& d, cudaStream_t stream);

// fill_mode: 0 reflect, 1 wrap, 2 constant, 3 nearest. transforms: float32 (1 or n, 8).
void affine_transform(DType t, const void* x, const float* transforms, bool shared_transform, void* y, int64_t n,
                      int64_t h, int64_t w, int64_t c, int fill_mode, bool bilinear, double fill_value,
                      cudaStream_t stream);

}  // namespace keras::cuda::kernels
