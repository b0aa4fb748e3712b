// What a layer-harness case is (LayerHarnessSpec), and the pieces the checks of
// support/layer_harness.h share: inputs, targets and losses built from a case, bitwise
// comparison, and ScopedRebind (weights seen as inputs by the gradient check).
#pragma once
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backend/autodiff.h"
#include "backend/ops.h"
#include "backend/random.h"
#include "layers/layer.h"

namespace keras::testing {

struct LayerHarnessSpec {
  std::string name;                        // tags failure messages
  std::function<LayerPtr()> make;          // a fresh, unbuilt layer on every call
  Shape input_shape;                       // one input, with the batch axis
  std::vector<Shape> weight_shapes;        // expected weights() shapes, in order
  std::optional<size_t> trainable_count;   // expected trainable weights; default: all
  Shape gradcheck_input_shape;             // tiny input for (g); empty = input_shape
  std::vector<Shape> input_shapes;         // several inputs (replaces input_shape when set)
  std::vector<Shape> gradcheck_input_shapes;  // tiny inputs for (g) of a multi-input layer
  bool check_gradients = true;             // (g); turn off only for non-differentiable layers
  bool training = false;                   // the `training` flag of every harness call
  double learning_rate = 0.05;             // the SGD step of (e)
  uint64_t seed = 1234;
  // Input i of the given shape (seed differs per input); default: standard normal float32, or
  // integers in [0, input_limit) when input_dtype is an integer dtype.
  std::function<Tensor(const Shape&, uint64_t seed)> make_input;
  DType input_dtype = DType::float32;
  int64_t input_limit = 0;  // > 0 for integer inputs
  // Keyword tensors and call options of every harness call (CallArgs::keywords / options):
  // the last keywords.size() inputs are passed by these keywords.
  std::vector<std::string> keywords;
  json options = json::object();
};

namespace harness_detail {

inline std::vector<Shape> shapes_of(const LayerHarnessSpec& s) {
  return s.input_shapes.empty() ? std::vector<Shape>{s.input_shape} : s.input_shapes;
}

inline std::vector<Shape> gradcheck_shapes_of(const LayerHarnessSpec& s) {
  if (!s.gradcheck_input_shapes.empty()) return s.gradcheck_input_shapes;
  if (!s.gradcheck_input_shape.empty()) return {s.gradcheck_input_shape};
  return shapes_of(s);
}

inline TensorList inputs_for(const LayerHarnessSpec& s, const std::vector<Shape>& shapes, uint64_t seed) {
  TensorList xs;
  for (size_t i = 0; i < shapes.size(); ++i) {
    uint64_t si = seed + 101 * i;
    if (s.make_input) xs.push_back(s.make_input(shapes[i], si));
    else if (is_floating(s.input_dtype)) xs.push_back(random::normal(shapes[i], 0.0, 1.0, si, s.input_dtype));
    else xs.push_back(ops::cast(random::uniform(shapes[i], 0.0, static_cast<double>(s.input_limit) - 1e-3, si), s.input_dtype));
  }
  return xs;
}

inline bool bit_equal(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.raw_data(), cb.raw_data(), ca.nbytes()) == 0;
}

inline bool all_bit_equal(const TensorList& a, const TensorList& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!bit_equal(a[i], b[i])) return false;
  return true;
}

inline Shape unknown_batch(Shape s) {
  if (!s.empty()) s[0] = -1;
  return s;
}

inline TensorList targets_for(const TensorList& outputs, uint64_t seed) {
  TensorList t;
  for (size_t i = 0; i < outputs.size(); ++i)
    t.push_back(random::normal(outputs[i].shape(), 0.0, 1.0, seed + 7 * i, outputs[i].dtype()));
  return t;
}

// sum over floating outputs of mean((out - target)^2).
inline Tensor loss_of(const TensorList& outputs, const TensorList& targets) {
  Tensor loss;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!is_floating(outputs[i].dtype())) continue;
    Tensor l = ops::mean(ops::square(ops::subtract(outputs[i], targets[i])));
    loss = loss.defined() ? ops::add(loss, l) : l;
  }
  return loss;
}

// Clones of the floating inputs that require a gradient (others are passed as they are).
inline TensorList watched(const TensorList& xs) {
  TensorList out;
  for (const auto& x : xs) {
    Tensor c = x.clone();
    if (is_floating(c.dtype())) c.set_requires_grad(true);
    out.push_back(c);
  }
  return out;
}

// Makes variables compute with other tensors for the span of one call, so check_gradients (which
// differentiates w.r.t. its own input tensors) sees the layer's weights as inputs.
class ScopedRebind {
 public:
  ScopedRebind(const std::vector<Variable>& vars, const TensorList& values, size_t first) : vars_(vars) {
    for (size_t k = 0; k < vars_.size(); ++k) {
      Tensor t = values[first + k];
      vars_[k].swap_value(t);
      saved_.push_back(t);
    }
  }
  ~ScopedRebind() {
    for (size_t k = 0; k < vars_.size(); ++k) vars_[k].swap_value(saved_[k]);
  }
  ScopedRebind(const ScopedRebind&) = delete;
  ScopedRebind& operator=(const ScopedRebind&) = delete;

 private:
  std::vector<Variable> vars_;
  TensorList saved_;
};

}  // namespace harness_detail
}  // namespace keras::testing
