// The elementwise merge layers of Keras 3: Add, Subtract, Multiply, Average, Maximum, Minimum.
// Each takes a list of tensors (Subtract exactly two) of broadcastable shapes (see merge.h) and
// combines them with keras::ops, so gradients come from the tape. Configs hold the base keys only.
//
//   auto s = keras::layers::Add()({a, b});
//   auto m = keras::layers::multiply({a, b});   // the functional forms, as keras.layers.multiply
//
// Maximum/Minimum split the gradient half-and-half on ties (ops::maximum / ops::minimum).
#pragma once
#include "layers/merge.h"

namespace keras::layers {

// `...`: further member declarations of the class.
#define KERAS_ELEMENTWISE_MERGE(Name, ...)                                                  \
  class Name##Impl : public MergeImpl {                                                     \
   public:                                                                                  \
    explicit Name##Impl(MergeOptions options = {})                                          \
        : MergeImpl(LayerOptions{options.name, options.trainable, options.dtype}) {}        \
    std::string class_name() const override { return #Name; }                               \
                                                                                            \
   protected:                                                                               \
    Tensor merge_function(const TensorList& inputs) const override;                         \
    __VA_ARGS__                                                                             \
  };                                                                                        \
  KERAS_MERGE_LAYER_HANDLE(Name, MergeOptions)

// The merges whose values depend on the inputs' masks (Keras's Multiply, Maximum, Minimum):
// masked steps of an input do not take part. Multiply treats them as 1 and zeroes the steps no
// input keeps (when every input has a mask); Maximum/Minimum take the other operand there.
#define KERAS_MASKED_ELEMENTWISE_MERGE(Name) \
  KERAS_ELEMENTWISE_MERGE(Name, Tensor merge_with_masks(const TensorList& inputs, const TensorList& masks) const override;)

// x1 + x2 + ...; the call option "_fused_activation" ("relu"; not Keras's) applies a ReLU to the
// sum: a functional graph passes it when the layer's only reader is a ReLU, which it then skips
// (keras/models/functional.cpp), so that two inputs of one shape on the CPU take ops::add_relu.
KERAS_ELEMENTWISE_MERGE(Add, TensorList call(const TensorList& inputs, const CallContext& ctx) override;);
KERAS_MASKED_ELEMENTWISE_MERGE(Multiply);  // x1 * x2 * ...
KERAS_ELEMENTWISE_MERGE(Average);          // (x1 + x2 + ...) / n
KERAS_MASKED_ELEMENTWISE_MERGE(Maximum);   // max(x1, x2, ...)
KERAS_MASKED_ELEMENTWISE_MERGE(Minimum);   // min(x1, x2, ...)

// x1 - x2: exactly two inputs.
class SubtractImpl : public MergeImpl {
 public:
  explicit SubtractImpl(MergeOptions options = {})
      : MergeImpl(LayerOptions{options.name, options.trainable, options.dtype}) {}
  std::string class_name() const override { return "Subtract"; }

 protected:
  Tensor merge_function(const TensorList& inputs) const override;
  size_t max_inputs() const override { return 2; }
};
KERAS_MERGE_LAYER_HANDLE(Subtract, MergeOptions);

#undef KERAS_ELEMENTWISE_MERGE
#undef KERAS_MASKED_ELEMENTWISE_MERGE

// Functional forms (keras.layers.add etc.): a fresh layer called on `inputs`.
KerasTensor add(const std::vector<KerasTensor>& inputs, MergeOptions options = {});
KerasTensor subtract(const std::vector<KerasTensor>& inputs, MergeOptions options = {});
KerasTensor multiply(const std::vector<KerasTensor>& inputs, MergeOptions options = {});
KerasTensor average(const std::vector<KerasTensor>& inputs, MergeOptions options = {});
KerasTensor maximum(const std::vector<KerasTensor>& inputs, MergeOptions options = {});
KerasTensor minimum(const std::vector<KerasTensor>& inputs, MergeOptions options = {});

// Reads the base keys of a merge layer config (unknown keys ignored).
MergeOptions merge_options_from_config(const json& config);

}  // namespace keras::layers
