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
// - the call's other arguments (layers/layer.h CallArgs keywords and options), which a saved node
//   records as Keras does and a loaded node replays only when the class declares them:
//   `tensor_parameters` names call()'s leading tensor parameters when there are several, each
//   its own positional argument (MultiHeadAttention: query, value, key); Keras 3 writes them as
//   separate args, tf_keras as kwargs after the first, and a loaded call passes them
//   positionally, in this order, however the file named them. Empty: call() takes one first
//   argument (a tensor, or several as one list: Add()([a, b])). `call_keywords` names the other
//   keyword arguments call() understands, tensors or values (LSTM: initial_state;
//   MultiHeadAttention: attention_mask, use_causal_mask, return_attention_scores, ...).
//   `legacy_list_keyword`: tf_keras's __call__ moves this keyword's tensors into the first
//   argument's list, after the inputs (its RNN layers and Bidirectional: initial_state).
//
// A class not declared here (custom layers) gets the default: build_config once built, no call
// defaults recorded, no keyword arguments replayed.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "layers/layer.h"

namespace keras {

struct KerasSignature {
  bool built_at_init = false;             // no build_config
  std::optional<bool> training_default = std::nullopt;  // call(training=<bool>) default; nullopt: None or absent
  bool takes_mask = false;                // call() has a `mask` argument
  bool converts_inputs = true;            // Keras's _convert_input_args
  std::vector<std::string> tensor_parameters = {};  // several positional tensors, by name
  std::vector<std::string> call_keywords = {};      // other keyword arguments call() takes
  std::string legacy_list_keyword = "";              // tf_keras folds it into the input list
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
