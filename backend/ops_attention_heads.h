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


}  // namespace keras::ops
