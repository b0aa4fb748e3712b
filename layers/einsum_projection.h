// The projections inside the attention layers. Keras builds them as EinsumDense sublayers
// (named "query", "key", "value", "attention_output"); every equation they use contracts the
// input's trailing `contracted` axes with the kernel's leading ones and appends the kernel's
// trailing `output_dims`:
//   x (..., c1..cm) , kernel (c1..cm, o1..on) -> (..., o1..on) [+ bias (o1..on)]
// which is one matmul on (rows, prod c) x (prod c, prod o). So this class computes exactly those,
// with Keras's class name, weight names (kernel, bias) and shapes, and is not a general
// EinsumDense (it is not registered: it only lives inside the attention layers).
#pragma once
#include "layers/constraints.h"
#include "layers/initializers.h"
#include "layers/layer_handle.h"
#include "layers/regularizers.h"

namespace keras::layers {

struct EinsumProjectionOptions {
  std::string equation;   // Keras's equation, for get_config ("abc,cde->abde")
  int64_t contracted = 1;  // trailing input axes contracted, >= 1
  Shape output_dims;      // the kernel's (and bias's) trailing extents, all >= 1
  bool use_bias = true;
  std::string activation = "linear";  // "sigmoid" for the gate of use_gate
  InitializerPtr kernel_initializer;
  InitializerPtr bias_initializer;
  RegularizerPtr kernel_regularizer;
  RegularizerPtr bias_regularizer;
  ConstraintPtr kernel_constraint;
  ConstraintPtr bias_constraint;
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

// Input: rank > contracted, the trailing `contracted` extents known (and fixed once built).
class EinsumProjectionImpl : public Layer {
 public:
  explicit EinsumProjectionImpl(EinsumProjectionOptions options);
  std::string class_name() const override { return "EinsumDense"; }
  void build(const std::vector<Shape>& input_shapes) override;
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }

 private:
  EinsumProjectionOptions options_;
  Variable kernel_, bias_;
};

}  // namespace keras::layers
