// keras::ops — the differentiable tensor operations, as in keras.ops. Every function here runs
// through the op registry (backend/op_registry.h): shape checks with clear errors, a kernel per
// device, and tape recording when gradients are being taken.
//
// Broadcasting follows NumPy. Axes may be negative. Binary ops require equal dtypes (cast first)
// and one device. Errors: ShapeError for shapes that do not fit, TypeError for dtypes,
// IndexError for axes/indices out of range, all naming the op.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "backend/op_registry.h"
#include "backend/random.h"

namespace keras::ops {

// ---- elementwise arithmetic (broadcasting) ----
Tensor add(const Tensor& a, const Tensor& b);
Tensor subtract(const Tensor& a, const Tensor& b);
Tensor multiply(const Tensor& a, const Tensor& b);
Tensor divide(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, double exponent);
Tensor negative(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor square(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);  // no gradient (zero)
// Clamps into [min_value, max_value]; gradient passes where min < x < max.
Tensor clip(const Tensor& x, double min_value, double max_value);
// Scalar forms (the scalar takes x's dtype).
Tensor add(const Tensor& a, double b);
Tensor multiply(const Tensor& a, double b);

// Reduces `grad` by summing over broadcast axes so that it has `shape` (gradient of broadcasting).
Tensor sum_to_shape(const Tensor& grad, const Shape& shape);
Tensor broadcast_to(const Tensor& x, const Shape& shape);

// ---- comparisons and selection (no gradient; comparisons return bool) ----
Tensor equal(const Tensor& a, const Tensor& b);
Tensor not_equal(const Tensor& a, const Tensor& b);
Tensor less(const Tensor& a, const Tensor& b);
Tensor less_equal(const Tensor& a, const Tensor& b);
Tensor greater(const Tensor& a, const Tensor& b);
Tensor greater_equal(const Tensor& a, const Tensor& b);
// cond ? a : b with broadcasting; cond is bool. Differentiable in a and b.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
// Converts dtype; differentiable between floating types.
Tensor cast(const Tensor& x, DType dtype);

// ---- activations (oneDNN eltwise forward/backward on the CPU where it has them) ----
Tensor relu(const Tensor& x);
Tensor relu6(const Tensor& x);
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.2);
Tensor elu(const Tensor& x, double alpha = 1.0);
Tensor selu(const Tensor& x);
Tensor gelu(const Tensor& x, bool approximate = false);
Tensor sigmoid(const Tensor& x);
// relu6(x + 3) / 6, as Keras 3 (tf_keras 2.x's hard_sigmoid is clip(0.2 x + 0.5, 0, 1) instead;
// a Keras 2 config naming "hard_sigmoid" is read with this Keras 3 meaning, as Keras 3 reads it).
Tensor hard_sigmoid(const Tensor& x);
Tensor hard_silu(const Tensor& x);  // x * hard_sigmoid(x), Keras 3's hard_silu (alias hard_swish)
Tensor tanh(const Tensor& x);
Tensor softplus(const Tensor& x);
Tensor softsign(const Tensor& x);
Tensor silu(const Tensor& x);  // = swish
Tensor exponential(const Tensor& x);
Tensor linear(const Tensor& x);  // identity
Tensor softmax(const Tensor& x, int axis = -1);
Tensor log_softmax(const Tensor& x, int axis = -1);
// Applies the Keras activation named `name` ("relu", "swish", "hard_swish", "softmax", ...); throws
// ValueError listing the known names.
Tensor activation(const std::string& name, const Tensor& x);
bool is_activation(const std::string& name);
std::vector<std::string> activation_names();

// Inverted dropout: zeroes each element with probability `rate`, scales the rest by
// 1/(1-rate). rate in [0, 1) (ValueError otherwise); the mask comes from `gen`.
Tensor dropout(const Tensor& x, double rate, Generator& gen);

// ---- linear algebra ----
// Matrix product over the last two axes, batch axes broadcast (as numpy.matmul); a 1-D
// operand is not supported (reshape it). On the CPU oneDNN's matmul, or for one float32 product
// with b not transposed the project's GEMM where the kernel chooser timed it faster (gemm_direct.h).
Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a = false, bool transpose_b = false);
// Dense layer core: x (..., in) @ kernel (in, units) + bias (units), then `activation` fused
// (a oneDNN post-op, or the epilogue of the project's float32 GEMMs: dense_panels.h in
// inference, gemm_direct.h in a training step) where possible. bias may be undefined.
Tensor dense(const Tensor& x, const Tensor& kernel, const Tensor& bias, const std::string& activation = "linear");

// ---- reductions (axes empty = all axes) ----
Tensor sum(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
Tensor mean(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
Tensor max(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
Tensor min(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
Tensor argmax(const Tensor& x, int axis = -1);  // int64, no gradient
Tensor argmin(const Tensor& x, int axis = -1);  // int64, no gradient

// ---- shape manipulation ----
Tensor reshape(const Tensor& x, const Shape& shape);  // one extent may be -1
Tensor transpose(const Tensor& x, const std::vector<int>& perm = {});  // empty = reverse
Tensor concatenate(const TensorList& xs, int axis = -1);
// x[begin : begin+size] per axis; size -1 = to the end.
Tensor slice(const Tensor& x, const std::vector<int64_t>& begin, const std::vector<int64_t>& size);
// Takes entries of `indices` (int32/int64) along `axis`; IndexError naming the bad index.
Tensor take(const Tensor& x, const Tensor& indices, int axis = 0);
// Float32 one-hot of int labels, depth `num_classes` appended; IndexError for labels outside
// [0, num_classes).
Tensor one_hot(const Tensor& indices, int64_t num_classes, DType dtype = DType::float32);
Tensor expand_dims(const Tensor& x, int axis);
Tensor squeeze(const Tensor& x, int axis);

}  // namespace keras::ops

namespace keras {
// Arithmetic operators on tensors (differentiable), scalars take the tensor's dtype.
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);
}  // namespace keras
