// SimpleRNN, LSTM and GRU: a layer whose Keras config is its cell's keys and the sequence keys,
// flat (no nested "cell"), plus activity_regularizer. These templates map such a layer's options
// struct to its cell's options and to and from that config, once for the three layers.
#pragma once
#include "layers/rnn.h"
#include "layers/rnn_cell_args.h"

namespace keras::layers {

// The options of the cell a flat layer owns; Keras names it "<layer class>_cell" (lstm_cell).
template <class CellOptions, class Options>
CellOptions flat_cell_options(const Options& o, const char* cell_name) {
  CellOptions c;
  config::copy_cell_args(o, c);
  c.name = cell_name;
  c.trainable = o.trainable;
  c.dtype = o.dtype;  // Keras: the cell computes under the layer's policy
  return c;
}

// `sequence_config` (RNNImpl::sequence_config()) plus the cell keys and activity_regularizer.
template <class Options>
json flat_rnn_config(json sequence_config, const Options& o) {
  config::write_cell_args(o, sequence_config);
  sequence_config["activity_regularizer"] = regularizers::serialize(o.activity_regularizer.ptr());
  return sequence_config;
}

// Reads a flat Keras 2 or 3 config (unknown keys, such as Keras 2's implementation or
// time_major, ignored); `where` names the class in errors.
template <class Options>
Options flat_rnn_options_from_config(const json& c, const std::string& where) {
  Options o;
  config::read_base_keys(c, o);
  config::read_cell_args(c, o, where);
  if (c.contains("activity_regularizer")) o.activity_regularizer = regularizers::from_config(c["activity_regularizer"]);
  set_sequence_args(sequence_args_from_config(c), o);
  return o;
}

}  // namespace keras::layers
