// What Keras 3's class of a layer declares that decides what Keras records about the layer when
// it saves a functional model, by Keras class name. Keras derives it from its Python classes; a
// C++ class states it next to its registration (KERAS_SIGNATURE below), so that serialize_model
// writes what Keras writes for the same model:
//
// - build_config: Keras wraps every build() to record the shapes it was called with, so a layer
//   has one once built, unless its class has no build() and marks itself built at construction
//   (Layer._build_at_init: activations, pooling, Dropout, Reshape, InputLayer...): `built_at_init`.
// - a node's kwargs: Layer.__call__ resolves the call() arguments `training` (given, else the
//   call()'s default) and `mask` (None, or a None per tensor of a list argument) into the same
//   dict it records in the node, unless it copied that dict first, which it does when it
//   converts the inputs: the caller passed keyword arguments, the argument is not one tensor, or
//   its dtype is not the layer's (`converts_inputs` false: never). So Dropout's node records
//   {"training": false}, BatchNormalization's {"mask": null}, a nested Functional's
//   {"mask": null}, a RandomFlip's {"training": true}.
//
// A class not declared here (custom layers) gets the default: build_config once built, no call
// defaults recorded.
#pragma once
#include <optional>
#include <string>

#include "layers/layer.h"

namespace keras {

struct KerasSignature {
  bool built_at_init = false;             // no build_config
  std::optional<bool> training_default = std::nullopt;  // call(training=<bool>) default; nullopt: None or absent
  bool takes_mask = false;                // call() has a `mask` argument
  bool converts_inputs = true;            // Keras's _convert_input_args
  // call() takes each tensor as its own positional argument (MultiHeadAttention(query, value)),
  // so a node records args [q, v], not one list argument [[q, v]] (Add()([a, b])).
  bool tensor_per_argument = false;
  // The layer's build_config when Keras's is not {"input_shape": <the input shapes>}: a build()
  // with one argument per call tensor (MultiHeadAttention's query_shape, value_shape, key_shape)
  // records {"shapes_dict": {...}}. Called on built layers only.
  json (*build_config)(const Layer& layer) = nullptr;
};

// Declares the signature of `class_name`; a second declaration replaces the first.
void register_keras_signature(const std::string& class_name, const KerasSignature& signature);
// The declared signature, or the default one for an undeclared class.
const KerasSignature& keras_signature(const std::string& class_name);

// KERAS_SIGNATURE(Dropout, .built_at_init = true, .training_default = false);
#define KERAS_SIGNATURE(cls, ...)                                                            \
  static const bool KERAS_CONCAT(keras_signature_registered_, cls) = [] {                    \
    ::keras::register_keras_signature(#cls, ::keras::KerasSignature{__VA_ARGS__});          \
    return true;                                                                             \
  }()

}  // namespace keras
