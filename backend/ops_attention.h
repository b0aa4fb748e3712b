// keras::ops for attention: a fused masked softmax (a registered op with CPU kernels for float32
// and float64) and scaled dot-product attention composed of batched matmuls around it.
//
// Keras masks attention scores in two ways, and the layers pick the one Keras uses:
//  - MaskFill::replace (keras.layers.Softmax with a mask, ops.dot_product_attention): masked
//    scores become -1e9 before the softmax; their gradient is zero.
//  - MaskFill::subtract (keras.layers.Attention / AdditiveAttention): masked scores become
//    score - 1e9, computed in the tensor's dtype (in float32 a fully masked row thus softmaxes
//    its rounded scores, as Keras does); the gradient passes through them.
// `zero_masked` then zeroes the masked probabilities (the Softmax layer's final where): a fully
// masked row gives zeros instead of a uniform row.
#pragma once
#include "backend/ops.h"

namespace keras::ops {

enum class MaskFill { replace, subtract };

struct MaskedSoftmaxOptions {
  MaskFill fill = MaskFill::replace;
  bool zero_masked = false;
};

// Softmax over the last axis of x (float32/float64, rank >= 1) where `mask` (bool, broadcastable
// to x; true = attend) is false the scores are filled as `options` says. An undefined mask is a
// plain softmax. Differentiable in x. TypeError for other dtypes or a non-bool mask, ShapeError
// when the mask does not broadcast to x.
Tensor masked_softmax(const Tensor& x, const Tensor& mask, MaskedSoftmaxOptions options = {});

struct DotProductAttentionOptions {
  double scale = 1.0;            // multiplies the query before the product (Keras scales the query)
  Tensor mask;                   // bool, broadcastable to the scores (..., Tq, Tk); undefined = none
  MaskedSoftmaxOptions softmax;  // how masked scores are filled
  double dropout = 0.0;          // rate on the probabilities; applied only with a generator
  Generator* generator = nullptr;
};

struct DotProductAttentionOutputs {
  Tensor output;  // (..., Tq, Dv)
  Tensor scores;  // the probabilities (..., Tq, Tk), before dropout
};

// softmax(scale * q @ k^T, mask) @ v for q (..., Tq, D), k (..., Tk, D), v (..., Tk, Dv) with
// equal leading axes (broadcasting as matmul). ShapeError naming the shapes when they do not fit.
DotProductAttentionOutputs dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                                 const DotProductAttentionOptions& options = {});

// Logical and of two bool tensors with broadcasting; an undefined operand is "all true".
Tensor mask_and(const Tensor& a, const Tensor& b);

// (1, Tq, Tk) bool: true where key index <= query index (Keras's _compute_causal_mask).
Tensor causal_mask(int64_t tq, int64_t tk);

}  // namespace keras::ops
