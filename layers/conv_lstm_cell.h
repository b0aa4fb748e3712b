// ConvLSTMCell: one timestep of ConvLSTM1D/2D/3D (Keras 3's keras.src.layers.rnn.conv_lstm
// ConvLSTMCell, which Keras does not export: the layers own it as their "conv_lstm_cell"). An
// LSTM step whose matrix products are convolutions, Keras's gate order i, f, c, o:
//   z = conv(x, kernel, strides, padding, dilation_rate) + bias
//     + conv(h, recurrent_kernel, strides 1, padding "same")
//   i, f, o = recurrent_activation(z_i, z_f, z_o);  c' = f * c + i * activation(z_c)
//   h' = o * activation(c');  output h', states [h', c'], each (batch, out spatial..., filters)
// (channels_first: (batch, filters, out spatial...)). The step input is (batch, spatial...,
// channels) or (batch, channels, spatial...).
// Dropout: in training, Keras's four masks per sequence (one per gate) on the step input and,
// for recurrent_dropout, four on h.
#pragma once
#include <vector>

#include "layers/constraints.h"
#include "layers/initializers.h"
#include "layers/regularizers.h"
#include "layers/rnn_cell.h"

namespace keras::layers {

// The config of the cell; `rank` spatial axes (1, 2 or 3), every size with `rank` entries.
struct ConvLSTMCellOptions {
  int rank = 2;
  int64_t filters = 0;  // required, >= 1
  std::vector<int64_t> kernel_size;
  std::vector<int64_t> strides;
  std::string padding = "valid";  // "valid" or "same" (input convolution; the recurrent one is "same")
  std::string data_format = "channels_last";
  std::vector<int64_t> dilation_rate;
  std::string activation = "tanh";
  std::string recurrent_activation = "sigmoid";
  bool use_bias = true;
  InitializerArg kernel_initializer = "glorot_uniform";
  InitializerArg recurrent_initializer = "orthogonal";
  InitializerArg bias_initializer = "zeros";
  bool unit_forget_bias = true;
  RegularizerArg kernel_regularizer;
  RegularizerArg recurrent_regularizer;
  RegularizerArg bias_regularizer;
  ConstraintArg kernel_constraint;
  ConstraintArg recurrent_constraint;
  ConstraintArg bias_constraint;
  double dropout = 0.0;
  double recurrent_dropout = 0.0;
  std::optional<int64_t> seed;
  std::string name = "conv_lstm_cell";
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

// The construction checks of the cell (ValueError naming `where`): rank 1-3, filters >= 1, sizes
// of `rank` positive values, padding, data_format, strides with dilation, activations and
// initializers, dropout rates in [0, 1].
void check_conv_lstm_cell_options(const std::string& where, const ConvLSTMCellOptions& options);

// Weights: kernel (kernel_size..., channels, 4*filters), recurrent_kernel (kernel_size...,
// filters, 4*filters), bias (4*filters,) when use_bias (unit_forget_bias: ones on f).
class ConvLSTMCellImpl : public RNNCell {
 public:
  explicit ConvLSTMCellImpl(ConvLSTMCellOptions options);
  std::string class_name() const override { return "ConvLSTMCell"; }
  std::vector<int64_t> state_size() const override { return {options_.filters, options_.filters}; }
  int64_t output_size() const override { return options_.filters; }
  int step_rank() const override { return options_.rank + 1; }
  int64_t step_features(const Shape& step) const override;
  Shape step_output_shape(const Shape& step) const override;
  std::vector<Shape> state_shapes(const Shape& step) const override;
  void build(const std::vector<Shape>& input_shapes) override;
  std::pair<Tensor, TensorList> step(const Tensor& x, const TensorList& states, bool training) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  json get_config() const override;
  const ConvLSTMCellOptions& options() const { return options_; }

 private:
  // conv(x, w [+ b]) over channels-last x: the input convolution (`input` true: the layer's
  // strides, padding and dilation) or the recurrent one (stride 1, "same").
  Tensor convolve(const Tensor& x, const Tensor& w, const Tensor& b, bool input) const;

  ConvLSTMCellOptions options_;
  Variable kernel_, recurrent_kernel_, bias_;
};

}  // namespace keras::layers
