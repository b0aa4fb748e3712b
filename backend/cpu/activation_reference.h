// CPU activation kernels, exposed so that tests can compare the oneDNN path against the plain
// loops and so that other CPU kernels (a fused Dense activation) can reuse the mapping.
//
// Every function takes contiguous tensors of one floating dtype and equal shapes, writes `out`
// (pre-allocated, same shape and dtype) and throws TypeError for other dtypes.
#pragma once
#include <functional>
#include "backend/tensor.h"

namespace keras::cpu {

// The elementwise activations with a registered forward and backward op.
enum class Eltwise {
  relu, leaky_relu, relu6, elu, selu, gelu_erf, gelu_tanh, sigmoid, hard_sigmoid, hard_silu, tanh,
  softplus, softsign, silu, exponential
};

// True when the backward reads the forward output y (relu, sigmoid, tanh, exponential): saving
// y lets the input be freed. Otherwise the backward reads the input x.
bool eltwise_uses_output(Eltwise kind);

// out = f(x; alpha). alpha is the slope of leaky_relu and the alpha of elu; ignored elsewhere.
void eltwise_forward_reference(Eltwise kind, const Tensor& x, Tensor& out, double alpha);
// out = grad * f'(.) where `saved` is y or x as eltwise_uses_output says.
void eltwise_backward_reference(Eltwise kind, const Tensor& grad, const Tensor& saved, Tensor& out,
                                double alpha);
// Dispatchers: oneDNN eltwise for float32 where oneDNN has the algorithm, the reference otherwise.
void eltwise_forward(Eltwise kind, const Tensor& x, Tensor& out, double alpha);
void eltwise_backward(Eltwise kind, const Tensor& grad, const Tensor& saved, Tensor& out, double alpha);

// Softmax (log=false) or log-softmax (log=true) over `axis` (already in [0, rank)).
void softmax_forward_reference(const Tensor& x, Tensor& out, int axis, bool log);
// out = d/dx given grad and the forward output y.
void softmax_backward_reference(const Tensor& grad, const Tensor& y, Tensor& out, int axis, bool log);
void softmax_forward(const Tensor& x, Tensor& out, int axis, bool log);
void softmax_backward(const Tensor& grad, const Tensor& y, Tensor& out, int axis, bool log);
// Unlike the functions above, on raw memory: a function that softmaxes, in place, `rows` contiguous
// float32 rows of `len` at the pointer it is given, on the calling thread alone (oneDNN runs
// single-threaded inside a parallel region): for kernels that softmax one block of their own
// parallel loop while it is in cache. Made once per call of such a kernel, it may run on every
// thread at once. Precondition: rows >= 1 and len >= 1.
std::function<void(float*)> softmax_rows_in_place(int64_t rows, int64_t len);

}  // namespace keras::cpu
