// Internal: the kwargs of a functional node as Keras 3 records them (layers/keras_signature.h),
// written by serialize_model, and which of them only restate a call default, dropped by
// to_keras2 and not replayed by model_from_config.
#pragma once
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "layers/layer.h"

namespace keras::detail {

using json = nlohmann::json;

// Keras 3's node kwargs for `node`, a call of `layer`: the explicit `training`, plus the call
// defaults Layer.__call__ fills in when it does not convert the inputs (training's default when
// not None; the input's mask, or one per tensor of a list argument: None when it has none). Keyword tensors and options are
// keyword arguments the caller passed: Keras converts, and records no defaults, then.
// `mask` writes the recorded mask of an input tensor (detail/mask_nodes.h); without it, null.
using MaskWriter = std::function<json(const KerasTensor&)>;
json recorded_kwargs(const Layer& layer, const LayerNode& node, const MaskWriter& mask = {});

// Keras 3's node {"args", "kwargs"} for `node`, a call of `layer` (not an operation), with each
// tensor written by `keras_tensor`: the positional inputs as one argument (a tensor, or a list of
// several: Add()([a, b])), or as separate arguments when the class declares that many
// tensor_parameters (MultiHeadAttention(q, v)); recorded_kwargs plus every keyword tensor under
// its name (a list when the name repeats: initial_state=[h, c]) and every option as its value.
json keras3_node(const Layer& layer, const LayerNode& node, const std::function<json(const KerasTensor&)>& keras_tensor,
                 const MaskWriter& mask = {});

// A mask that masks nothing: null, or lists/dicts of nulls only (Keras records one per tensor).
bool holds_no_tensor(const json& value);

// True for a recorded `key: value` of a call of Keras class `class_name` that restates what the
// call does without it: a mask that holds no tensor, or a `training` equal to the class's call
// default (Keras 3's Functional.call replaces a node's training by the model's mode whenever one
// is given, and otherwise the default applies anyway). Keras 2 records only explicit arguments
// and honours them, so such a key must not reach a Keras 2 node.
bool is_call_default(const std::string& class_name, const std::string& key, const json& value);

}  // namespace keras::detail
