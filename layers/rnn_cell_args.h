// The options the recurrent cells share (SimpleRNNCell, LSTMCell, GRUCell) and the layers that
// wrap them (SimpleRNN, LSTM, GRU, whose Keras config is the cell's keys, flat): the config keys
// are written, read, checked and copied between a layer's and its cell's options here, once.
// Keys only some cells have (recurrent_activation, unit_forget_bias, reset_after) are handled when
// the options struct has the member.
#pragma once
#include <array>
#include <string>

#include "layers/weight_args.h"

namespace keras::config {

// kernel, recurrent_kernel ("recurrent_*" keys), bias: Keras's order of the cells' weights.
template <class O>
constexpr std::array<WeightArgs<O>, 3> recurrent_weights() {
  return {{{"kernel", &O::kernel_initializer, &O::kernel_regularizer, &O::kernel_constraint},
           {"recurrent", &O::recurrent_initializer, &O::recurrent_regularizer, &O::recurrent_constraint},
           {"bias", &O::bias_initializer, &O::bias_regularizer, &O::bias_constraint}}};
}

// Writes the cell keys of `o` into `c` (no activity_regularizer: cells have none).
template <class O>
void write_cell_args(const O& o, json& c) {
  c["units"] = o.units;
  c["activation"] = o.activation;
  if constexpr (requires { o.recurrent_activation; }) c["recurrent_activation"] = o.recurrent_activation;
  c["use_bias"] = o.use_bias;
  for (const WeightArgs<O>& w : recurrent_weights<O>()) {
    const std::string key = w.weight;
    c[key + "_initializer"] = initializers::serialize((o.*w.initializer).ptr());
    c[key + "_regularizer"] = regularizers::serialize((o.*w.regularizer).ptr());
    c[key + "_constraint"] = constraints::serialize((o.*w.constraint).ptr());
  }
  if constexpr (requires { o.unit_forget_bias; }) c["unit_forget_bias"] = o.unit_forget_bias;
  if constexpr (requires { o.reset_after; }) c["reset_after"] = o.reset_after;
  c["dropout"] = o.dropout;
  c["recurrent_dropout"] = o.recurrent_dropout;
  c["seed"] = o.seed ? json(*o.seed) : json(nullptr);
}

// Reads the keys write_cell_args writes (absent ones keep o's values); `where` names the config.
template <class O>
void read_cell_args(const json& c, O& o, const std::string& where) {
  if (!c.contains("units") || !c["units"].is_number_integer())
    fail<ValueError>(where, "an integer 'units'", c.contains("units") ? c["units"].dump() : "none");
  o.units = c["units"].get<int64_t>();
  if (c.contains("activation")) o.activation = activation_from_config(c["activation"]);
  if constexpr (requires { o.recurrent_activation; })
    if (c.contains("recurrent_activation")) o.recurrent_activation = activation_from_config(c["recurrent_activation"]);
  o.use_bias = c.value("use_bias", true);
  auto key = [](const WeightArgs<O>& w, const char* suffix) { return std::string(w.weight) + suffix; };
  for (const WeightArgs<O>& w : recurrent_weights<O>()) {
    if (c.contains(key(w, "_initializer"))) o.*w.initializer = initializers::from_config(c[key(w, "_initializer")]);
    if (c.contains(key(w, "_regularizer"))) o.*w.regularizer = regularizers::from_config(c[key(w, "_regularizer")]);
    if (c.contains(key(w, "_constraint"))) o.*w.constraint = constraints::from_config(c[key(w, "_constraint")]);
  }
  if constexpr (requires { o.unit_forget_bias; }) o.unit_forget_bias = c.value("unit_forget_bias", true);
  if constexpr (requires { o.reset_after; }) o.reset_after = c.value("reset_after", true);
  if (c.contains("dropout") && c["dropout"].is_number()) o.dropout = c["dropout"].get<double>();
  if (c.contains("recurrent_dropout") && c["recurrent_dropout"].is_number())
    o.recurrent_dropout = c["recurrent_dropout"].get<double>();
  if (c.contains("seed") && c["seed"].is_number_integer()) o.seed = c["seed"].get<int64_t>();
}

// Construction checks: units >= 1, known activations, initializers present, dropout rates in
// [0, 1] (ValueError naming `where`).
template <class O>
void check_cell_args(const std::string& where, const O& o) {
  if (o.units < 1) fail<ValueError>(where, "units >= 1", std::to_string(o.units));
  if constexpr (requires { o.recurrent_activation; })
    if (!ops::is_activation(o.recurrent_activation))
      fail<ValueError>(where, "a known recurrent_activation", "'" + o.recurrent_activation + "'");
  check_weight_args(where, o, recurrent_weights<O>());
  for (double rate : {o.dropout, o.recurrent_dropout})
    if (!(rate >= 0.0 && rate <= 1.0))
      fail<ValueError>(where, "dropout and recurrent_dropout in [0, 1]", std::to_string(rate));
}

// Copies every cell option `from` has into `to` (a layer's options into its cell's, or back).
template <class From, class To>
void copy_cell_args(const From& from, To& to) {
  to.units = from.units;
  to.activation = from.activation;
  if constexpr (requires { from.recurrent_activation; to.recurrent_activation; })
    to.recurrent_activation = from.recurrent_activation;
  to.use_bias = from.use_bias;
  to.kernel_initializer = from.kernel_initializer;
  to.recurrent_initializer = from.recurrent_initializer;
  to.bias_initializer = from.bias_initializer;
  to.kernel_regularizer = from.kernel_regularizer;
  to.recurrent_regularizer = from.recurrent_regularizer;
  to.bias_regularizer = from.bias_regularizer;
  to.kernel_constraint = from.kernel_constraint;
  to.recurrent_constraint = from.recurrent_constraint;
  to.bias_constraint = from.bias_constraint;
  if constexpr (requires { from.unit_forget_bias; to.unit_forget_bias; }) to.unit_forget_bias = from.unit_forget_bias;
  if constexpr (requires { from.reset_after; to.reset_after; }) to.reset_after = from.reset_after;
  to.dropout = from.dropout;
  to.recurrent_dropout = from.recurrent_dropout;
  to.seed = from.seed;
}

}  // namespace keras::config
