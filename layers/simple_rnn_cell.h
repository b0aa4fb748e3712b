// SimpleRNNCell (keras.layers.SimpleRNNCell): h' = activation(x @ kernel + bias + h @ recurrent_kernel);
// output h', state [h'].
#pragma once
#include "layers/constraints.h"
#include "layers/initializers.h"
#include "layers/layer_handle.h"
#include "layers/regularizers.h"
#include "layers/rnn_cell.h"

namespace keras::layers {

// The config of SimpleRNNCell (Keras keys and defaults).
struct SimpleRNNCellOptions {
  int64_t units = 0;  // required, >= 1
  std::string activation = "tanh";
  bool use_bias = true;
  InitializerArg kernel_initializer = "glorot_uniform";
  InitializerArg recurrent_initializer = "orthogonal";
  InitializerArg bias_initializer = "zeros";
  RegularizerArg kernel_regularizer;
  RegularizerArg recurrent_regularizer;
  RegularizerArg bias_regularizer;
  ConstraintArg kernel_constraint;
  ConstraintArg recurrent_constraint;
  ConstraintArg bias_constraint;
  double dropout = 0.0;
  double recurrent_dropout = 0.0;
  std::optional<int64_t> seed;
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

// Weights: kernel (in, units), recurrent_kernel (units, units), bias (units,) when use_bias.
// ValueError for units < 1, an unknown activation or a dropout rate outside [0, 1].
class SimpleRNNCellImpl : public RNNCell {
 public:
  explicit SimpleRNNCellImpl(SimpleRNNCellOptions options);
  std::string class_name() const override { return "SimpleRNNCell"; }
  std::vector<int64_t> state_size() const override { return {options_.units}; }
  int64_t output_size() const override { return options_.units; }
  void build(const std::vector<Shape>& input_shapes) override;
  std::pair<Tensor, TensorList> step(const Tensor& x, const TensorList& states, bool training) override;
  std::optional<ops::RnnSequenceArgs> fused_sequence(bool training) const override;
  json get_config() const override;
  const SimpleRNNCellOptions& options() const { return options_; }
  const Variable& kernel() const { return kernel_; }
  const Variable& recurrent_kernel() const { return recurrent_kernel_; }
  const Variable& bias() const { return bias_; }  // undefined without use_bias

 private:
  SimpleRNNCellOptions options_;
  Variable kernel_, recurrent_kernel_, bias_;
};
KERAS_LAYER_HANDLE(SimpleRNNCell, SimpleRNNCellOptions);

// Reads a Keras 2 or 3 SimpleRNNCell config (unknown keys ignored).
SimpleRNNCellOptions simple_rnn_cell_options_from_config(const json& config);

}  // namespace keras::layers
