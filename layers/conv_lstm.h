// ConvLSTM1D, ConvLSTM2D, ConvLSTM3D (keras.layers): an RNN over a ConvLSTMCell
// (layers/conv_lstm_cell.h), whose steps are images: sequences (batch, time, spatial...,
// channels) (channels_first: (batch, time, channels, spatial...)), outputs (batch, [time,]
// out spatial..., filters), return_state: [output, h, c]. Masks, stateful, go_backwards and
// initial_state as every RNN (rnn.h; an initial state has the output's step shape).
// Keras 3 config: the sequence keys and the cell's keys, flat, sizes as lists of one value per
// spatial axis; weights "<layer>/conv_lstm_cell/kernel", ".../recurrent_kernel", ".../bias".
//
//   auto x = k::layers::Input({10, 32, 32, 1});                       // 10 frames
//   auto y = k::layers::ConvLSTM2D({.filters = 16, .kernel_size = 3, .padding = "same",
//                                   .return_sequences = true})(x);
#pragma once
#include <initializer_list>
#include <vector>

#include "layers/conv_lstm_cell.h"
#include "layers/layer_handle.h"
#include "layers/rnn.h"

namespace keras::layers {

// kernel_size, strides or dilation_rate: one value for every spatial axis (3), or one per axis
// ({3, 3}).
struct ConvLSTMSize {
  std::vector<int64_t> values;
  ConvLSTMSize(int64_t n = 0) : values{n} {}
  ConvLSTMSize(std::initializer_list<int64_t> v) : values(v) {}
  bool operator==(const ConvLSTMSize&) const = default;
};

// The config of ConvLSTM1D/2D/3D (Keras keys and defaults). data_format "channels_last" or
// "channels_first"; padding "valid" or "same" (the input convolution's; the recurrent
// convolution is always "same" with stride 1).
struct ConvLSTMOptions {
  int64_t filters = 0;           // required, >= 1
  ConvLSTMSize kernel_size = 0;  // required
  ConvLSTMSize strides = 1;
  std::string padding = "valid";
  std::string data_format = "channels_last";
  ConvLSTMSize dilation_rate = 1;
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
  RegularizerArg activity_regularizer;  // kept in the config; not applied yet
  ConstraintArg kernel_constraint;
  ConstraintArg recurrent_constraint;
  ConstraintArg bias_constraint;
  double dropout = 0.0;
  double recurrent_dropout = 0.0;
  std::optional<int64_t> seed;
  bool return_sequences = false;
  bool return_state = false;
  bool go_backwards = false;
  bool stateful = false;
  bool unroll = false;
  bool zero_output_for_mask = false;
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};
using ConvLSTM1DOptions = ConvLSTMOptions;
using ConvLSTM2DOptions = ConvLSTMOptions;
using ConvLSTM3DOptions = ConvLSTMOptions;

// The shared implementation; `rank` spatial axes. ValueError at construction for a bad option
// (a size with neither 1 nor `rank` values, filters < 1, ...); ShapeError for an input of another
// rank or without known channels.
class ConvLSTMImpl : public RNNImpl {
 public:
  ConvLSTMImpl(int rank, ConvLSTMOptions options);
  std::string class_name() const override { return "ConvLSTM" + std::to_string(rank_) + "D"; }
  json get_config() const override;
  // The RNN's checks, then a kernel no larger than the padded step (ShapeError naming the layer).
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  const ConvLSTMOptions& options() const { return options_; }
  int rank() const { return rank_; }

 private:
  int rank_;
  ConvLSTMOptions options_;
};

class ConvLSTM1DImpl : public ConvLSTMImpl {
 public:
  explicit ConvLSTM1DImpl(ConvLSTMOptions o) : ConvLSTMImpl(1, std::move(o)) {}
};
class ConvLSTM2DImpl : public ConvLSTMImpl {
 public:
  explicit ConvLSTM2DImpl(ConvLSTMOptions o) : ConvLSTMImpl(2, std::move(o)) {}
};
class ConvLSTM3DImpl : public ConvLSTMImpl {
 public:
  explicit ConvLSTM3DImpl(ConvLSTMOptions o) : ConvLSTMImpl(3, std::move(o)) {}
};
KERAS_LAYER_HANDLE(ConvLSTM1D, ConvLSTMOptions);
KERAS_LAYER_HANDLE(ConvLSTM2D, ConvLSTMOptions);
KERAS_LAYER_HANDLE(ConvLSTM3D, ConvLSTMOptions);

// Reads a Keras 3 or tf_keras ConvLSTM<rank>D config (unknown keys, such as tf_keras's
// time_major, ignored); ValueError naming the class for a missing filters or kernel_size or a
// malformed size.
ConvLSTMOptions conv_lstm_options_from_config(const json& config, int rank);

}  // namespace keras::layers
