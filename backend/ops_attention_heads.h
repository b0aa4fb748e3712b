// keras::ops::attention_heads: multi-head attention in the projections' layout as one fused op
// (definitions: backend/ops_attention_heads.cpp; CPU kernels: backend/cpu/attention_heads_kernels.cpp).
#pragma once
#include "backend/ops.h"

namespace keras::ops {

struct AttentionHeadsOutputs {
  Tensor output;  // (B, Tq, H, Dv)
  Tensor scores;  // the probabilities (B, H, Tq, Tk)
};

// Unmasked attention of every (batch, head) pair in the projections' layout: q (B, Tq, H, D),
// k (B, Tk, H, D), v (B, Tk, H, Dv) -> softmax(scale * q k^T) v as (B, Tq, H, Dv) and the
// probabilities as (B, H, Tq, Tk): what dot_product_attention gives on the (B, H, T, D)
// transposes, without the transposes (one fused op; see backend/ops_attention_heads.cpp).
// Differentiable in q, k, v (first order). CPU only: check attention_heads_supported first.
AttentionHeadsOutputs attention_heads(const Tensor& q, const Tensor& k, const Tensor& v, double scale);
// Whether attention_heads has a kernel for these tensors (CPU, float32/float64, rank 4) and their
// shapes fit; where not, the composition of dot_product_attention reports the misfit.
bool attention_heads_supported(const Tensor& q, const Tensor& k, const Tensor& v);

// Self-attention from one packed projection: qkv (B, T, 3, H, D), as the interleaved output of
// query, key and value kernels concatenated along their outputs, gives what
// attention_heads(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], scale) gives (the same GEMMs and
// softmax: bit for bit), without the three slices; its gradient is one dqkv tensor, so the
// projection's backward is one GEMM with no sum of three input gradients. ShapeError for another
// rank or a third extent other than 3. CPU only: check attention_heads_packed_supported.
AttentionHeadsOutputs attention_heads_packed(const Tensor& qkv, double scale);
// Whether attention_heads_packed has a kernel for qkv: on the CPU, rank 5 with a third extent of
// 3, float32 or float64.
bool attention_heads_packed_supported(const Tensor& qkv);

}  // namespace keras::ops
