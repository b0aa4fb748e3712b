// The registry of ONNX emitters: one function per Keras layer class that writes that layer's
// inference computation into an onnx::Graph. "Can this model be exported?" is one lookup per
// layer class, made for every layer before anything is emitted or written.
//
// Contract of an emitter: given the layer, its config (get_config(), i.e. its options), the
// Values of one call's inputs and the Keras output specs of that call, append nodes computing the
// call in inference mode and return one Value per output (with the Keras shape of the spec; the
// layout is the emitter's choice). It throws NotImplementedError (naming the layer through
// Layer::where()) for options it cannot express; nothing is written to disk while emitting.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "keras/export/onnx_graph.h"
#include "keras/models/conv_bn_fold.h"
#include "layers/layer.h"

namespace keras::onnx {

struct EmitCall {
  const Layer& layer;
  const nlohmann::json& config;
  std::vector<Value> inputs;
  std::vector<TensorSpec> outputs;  // Keras shapes (batch -1) and dtypes of the call's outputs
  // Set for a Conv2D / DepthwiseConv2D whose output only an inference BatchNormalization reads:
  // the emitter writes the folded kernel and bias, and the walk skips the normalization.
  const detail::ConvBnFold* fold = nullptr;
  // The keywords of the last keywords.size() inputs (CallArgs::keywords); only the emitters that
  // accepts_keywords() names ever get any.
  std::vector<std::string> keywords = {};
  // The call's non-tensor options (CallArgs::options: use_causal_mask, ...).
  nlohmann::json options = nlohmann::json::object();
  // The weight initializer `suffix` of this layer, made once (shared layers reuse it).
  std::string weight(Graph& g, const std::string& suffix, const std::function<HostTensor()>& make) const;
  // A name for a node of this layer ("conv2d/Conv").
  std::string hint(const std::string& what) const { return layer.name() + "/" + what; }
  Value output(std::string name, bool channels_first = false, size_t index = 0) const;
};

using Emitter = std::function<std::vector<Value>(Graph&, const EmitCall&)>;

// Op layers (layers/op_layer.h) share class names with the merge layers ("Add"), so they are
// registered and looked up under this key instead of their class name.
inline constexpr const char* kOpLayerKey = "<op layer>";
// The registry key of `layer`: kOpLayerKey for an OpLayer, else its class name.
std::string emitter_key(const Layer& layer);

// Registers `emitter` for Keras class `class_name` (static registration, as the layer registry).
void register_emitter(const std::string& class_name, Emitter emitter);
// The emitter of `class_name`, or nullptr.
const Emitter* find_emitter(const std::string& class_name);
// Whether the emitter of `class_name` handles tensors passed by keyword (the recurrent layers'
// and Bidirectional's initial_state, the attention layers' key / attention_mask); the walk
// refuses keyword calls of every other layer.
bool accepts_keywords(const std::string& class_name);
// Every class with an emitter, sorted (for error messages and the README).
std::vector<std::string> exportable_classes();

// ---- helpers shared by the emitter families ----
// The layer's own weight `name` ("kernel") as a host tensor; throws when absent.
HostTensor host_weight(const Layer& layer, const std::string& name);
bool has_weight(const Layer& layer, const std::string& name);
// numpy.transpose(t, perm).
HostTensor permute(const HostTensor& t, const std::vector<int>& perm);
// Appends the Keras activation `name` (an ops::activation name) applied to `x`; "linear" adds
// nothing. `axis` is the ONNX axis of Keras's last axis (for softmax). NotImplementedError naming
// `where` for an activation without a mapping.
std::string emit_activation(Graph& g, const std::string& name, const std::string& x, int64_t axis,
                            const std::string& hint, const std::string& where);
// The attributes of an ONNX Conv (kernel_shape, strides, dilations, pads) for Keras's `padding`
// ("valid", "same" with TF's extra row at the end, "causal") on inputs of `spatial` extents; an
// unknown extent (-1) with "same" gives auto_pad SAME_UPPER, which pads the same way at run time.
std::vector<Attr> conv_attrs(const std::vector<int64_t>& spatial, const std::vector<int64_t>& kernel,
                             const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations,
                             const std::string& padding);
// Integer pair of a config entry ([a, b] or a single int, Keras's tuples).
std::vector<int64_t> config_ints(const nlohmann::json& config, const std::string& key, size_t n);

}  // namespace keras::onnx

#define KERAS_ONNX_CONCAT_INNER(a, b) a##b
#define KERAS_ONNX_CONCAT(a, b) KERAS_ONNX_CONCAT_INNER(a, b)
// KERAS_REGISTER_ONNX_EMITTER("Dense", emit_dense);
#define KERAS_REGISTER_ONNX_EMITTER(class_name, fn)                                             \
  static const bool KERAS_ONNX_CONCAT(keras_onnx_emitter_, __LINE__) = [] {                    \
    ::keras::onnx::register_emitter(class_name, fn);                                            \
    return true;                                                                                \
  }()
