// Arithmetic and a few keras::ops on symbolic tensors, as Keras 3 allows on KerasTensors:
//
//   auto a = keras::layers::Input({4}), b = keras::layers::Input({4});
//   auto y = keras::ops::relu(a + b * 2.0);      // records OpLayer nodes (layers/op_layer.h)
//   keras::Model model({a, b}, {y});
//
// Each call records one OpLayer node running the registered op, with shapes inferred at once by
// the op's shape function (NumPy broadcasting, unknown batch allowed); a shape or dtype error
// names the op layer, the op, the shapes and the producing layers. Scalars take the tensor's dtype.
// Any other registered op is reachable through keras::layers::apply_op(name, inputs, attrs).
// These nodes are not serialisable yet (see op_layer.h).
#pragma once
#include <vector>

#include "layers/keras_tensor.h"

namespace keras {

KerasTensor operator+(const KerasTensor& a, const KerasTensor& b);
KerasTensor operator-(const KerasTensor& a, const KerasTensor& b);
KerasTensor operator*(const KerasTensor& a, const KerasTensor& b);
KerasTensor operator/(const KerasTensor& a, const KerasTensor& b);  // floating dtypes only
KerasTensor operator-(const KerasTensor& x);
KerasTensor operator+(const KerasTensor& a, double b);
KerasTensor operator-(const KerasTensor& a, double b);
KerasTensor operator*(const KerasTensor& a, double b);
KerasTensor operator/(const KerasTensor& a, double b);
KerasTensor operator+(double a, const KerasTensor& b);
KerasTensor operator-(double a, const KerasTensor& b);
KerasTensor operator*(double a, const KerasTensor& b);
KerasTensor operator/(double a, const KerasTensor& b);

namespace ops {
// Same contracts as the Tensor forms in backend/ops.h.
KerasTensor add(const KerasTensor& a, const KerasTensor& b);
KerasTensor subtract(const KerasTensor& a, const KerasTensor& b);
KerasTensor multiply(const KerasTensor& a, const KerasTensor& b);
KerasTensor divide(const KerasTensor& a, const KerasTensor& b);
KerasTensor maximum(const KerasTensor& a, const KerasTensor& b);
KerasTensor minimum(const KerasTensor& a, const KerasTensor& b);
KerasTensor add(const KerasTensor& a, double b);
KerasTensor multiply(const KerasTensor& a, double b);
KerasTensor pow(const KerasTensor& a, double exponent);
KerasTensor negative(const KerasTensor& x);
KerasTensor exp(const KerasTensor& x);
KerasTensor log(const KerasTensor& x);
KerasTensor sqrt(const KerasTensor& x);
KerasTensor square(const KerasTensor& x);
KerasTensor abs(const KerasTensor& x);
KerasTensor relu(const KerasTensor& x);
KerasTensor sigmoid(const KerasTensor& x);
KerasTensor tanh(const KerasTensor& x);
KerasTensor softmax(const KerasTensor& x, int axis = -1);
KerasTensor matmul(const KerasTensor& a, const KerasTensor& b, bool transpose_a = false, bool transpose_b = false);
// Floating inputs (the Tensor form's integer-to-float32 cast is not recorded symbolically).
KerasTensor sum(const KerasTensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
KerasTensor mean(const KerasTensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
}  // namespace ops

}  // namespace keras
