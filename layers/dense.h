// Dense (keras.layers.Dense): y = activation(x @ kernel + bias) over the last axis.
#pragma once
#include "layers/constraints.h"
#include "layers/initializers.h"
#include "layers/layer_handle.h"
#include "layers/regularizers.h"

namespace keras::layers {

// The config of Dense (Keras keys and defaults; Keras's activation None is "linear").
struct DenseOptions {
  int64_t units = 0;  // required, >= 1
  std::string activation = "linear";
  bool use_bias = true;
  InitializerArg kernel_initializer = "glorot_uniform";
  InitializerArg bias_initializer = "zeros";
  RegularizerArg kernel_regularizer;
  RegularizerArg bias_regularizer;
  RegularizerArg activity_regularizer;  // kept in the config; not applied yet
  ConstraintArg kernel_constraint;  // applied after each optimizer update
  ConstraintArg bias_constraint;
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

// Weights: kernel (in, units), bias (units,) when use_bias. Input: rank >= 2 with a known last
// extent `in`; after building, the last extent must stay `in` (ShapeError naming the layer).
// Construction throws ValueError for units < 1 or an unknown activation.
class DenseImpl : public Layer {
 public:
  explicit DenseImpl(DenseOptions options);
  std::string class_name() const override { return "Dense"; }
  void build(const std::vector<Shape>& input_shapes) override;
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  bool supports_masking() const override { return true; }  // Keras: the mask passes through
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const DenseOptions& options() const { return options_; }
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }  // undefined without use_bias

 private:
  DenseOptions options_;
  Variable kernel_, bias_;
};
KERAS_LAYER_HANDLE(Dense, DenseOptions);

// Reads a Keras 2 or Keras 3 Dense config (unknown keys ignored). NotImplementedError naming the
// layer for a non-null quantization_config or lora_rank.
DenseOptions dense_options_from_config(const json& config);

}  // namespace keras::layers
