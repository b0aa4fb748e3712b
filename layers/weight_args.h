// The config keys of the layers that own weights and an activation (Dense, the convolutions):
// "activation", "use_bias", then per weight W "W_initializer", "W_regularizer",
// "W_constraint", and "activity_regularizer". Each layer names its weights once (a list of
// WeightArgs) and these helpers write, read and check those keys, so the layers differ only
// in their own keys while their options structs stay flat for designated initialisers.
#pragma once
#include <array>
#include <string>

#include "backend/ops.h"
#include "layers/constraints.h"
#include "layers/initializers.h"
#include "layers/layer_config.h"
#include "layers/regularizers.h"

namespace keras::config {

// One weight's arguments in options struct O: the key prefix ("kernel", "depthwise",
// "pointwise", "bias") and the members holding them.
template <class O>
struct WeightArgs {
  const char* weight;
  InitializerArg O::*initializer;
  RegularizerArg O::*regularizer;
  ConstraintArg O::*constraint;
};

// The weights of Dense, Conv1D, Conv2D and Conv2DTranspose: kernel, then bias.
template <class O>
constexpr std::array<WeightArgs<O>, 2> kernel_and_bias() {
  return {{{"kernel", &O::kernel_initializer, &O::kernel_regularizer, &O::kernel_constraint},
           {"bias", &O::bias_initializer, &O::bias_regularizer, &O::bias_constraint}}};
}

// Writes activation, use_bias, every weight's three keys and activity_regularizer (all of
// them, set or not).
template <class O, size_t N>
void write_weight_args(const O& o, const std::array<WeightArgs<O>, N>& weights, json& c) {
  c["activation"] = o.activation;
  c["use_bias"] = o.use_bias;
  for (const WeightArgs<O>& w : weights) {
    const std::string key = w.weight;
    c[key + "_initializer"] = initializers::serialize((o.*w.initializer).ptr());
    c[key + "_regularizer"] = regularizers::serialize((o.*w.regularizer).ptr());
    c[key + "_constraint"] = constraints::serialize((o.*w.constraint).ptr());
  }
  c["activity_regularizer"] = regularizers::serialize(o.activity_regularizer.ptr());
}

// Reads the keys write_weight_args writes; absent ones keep o's values. Keys are read in the
// order Keras lists them (initializers, regularizers, activity_regularizer, constraints), so a
// config with several bad entries reports the first in that order.
template <class O, size_t N>
void read_weight_args(const json& c, const std::array<WeightArgs<O>, N>& weights, O& o) {
  if (c.contains("activation")) o.activation = activation_from_config(c["activation"]);
  o.use_bias = c.value("use_bias", true);
  auto key = [](const WeightArgs<O>& w, const char* suffix) { return std::string(w.weight) + suffix; };
  for (const WeightArgs<O>& w : weights)
    if (c.contains(key(w, "_initializer"))) o.*w.initializer = initializers::from_config(c[key(w, "_initializer")]);
  for (const WeightArgs<O>& w : weights)
    if (c.contains(key(w, "_regularizer"))) o.*w.regularizer = regularizers::from_config(c[key(w, "_regularizer")]);
  if (c.contains("activity_regularizer")) o.activity_regularizer = regularizers::from_config(c["activity_regularizer"]);
  for (const WeightArgs<O>& w : weights)
    if (c.contains(key(w, "_constraint"))) o.*w.constraint = constraints::from_config(c[key(w, "_constraint")]);
}

// Construction checks (ValueError naming `where`): a known activation, then an initializer for
// each weight ("a kernel_initializer"; the bias's only with use_bias).
template <class O, size_t N>
void check_weight_args(const std::string& where, const O& o, const std::array<WeightArgs<O>, N>& weights) {
  if (!ops::is_activation(o.activation)) fail<ValueError>(where, "a known activation", "'" + o.activation + "'");
  for (const WeightArgs<O>& w : weights) {
    const bool needed = std::string(w.weight) != "bias" || o.use_bias;
    if (needed && !(o.*w.initializer)) fail<ValueError>(where, "a " + std::string(w.weight) + "_initializer", "none");
  }
}

}  // namespace keras::config
