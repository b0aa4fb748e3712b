// Layer: the base of every layer and model (keras.layers.Layer).
//
// A layer is used through a shared handle (LayerPtr). Calling it follows Keras's pipeline:
//   1. check the inputs, 2. build once from the input shapes (creating weights),
//   3. call() on tensors (eager, recorded on the tape when a GradientTape is active), or on
//      KerasTensors (symbolic: infer output shapes, record a node of the functional graph).
// Subclasses implement call(); they override build(), compute_output_shape(), get_config() and
// validate_input() as needed. A layer's options struct is its config (DESIGN.md decision 6).
//
// Names and paths: a layer created without a name is named when it joins a model, uniquely within
// it (snake_case of the class: dense, dense_1, ...). A weight's path is
// "<enclosing model prefix><layer name>/<weight name>" (decision 5).
// trainable=false freezes all weights of the layer (and of sublayers); frozen weights are
// non-trainable variables, never get gradients, and stay bit-identical through fit.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/op_registry.h"
#include "backend/random.h"
#include "backend/variable.h"
#include "layers/dtype_policy.h"
#include "layers/initializer.h"
#include "layers/keras_tensor.h"

namespace keras {

using json = nlohmann::json;
class Layer;
using LayerPtr = std::shared_ptr<Layer>;

// Keyword arguments of a call; an explicit `training` wins over the inherited mode.
//
// Tensors passed by keyword (LSTM's initial_state, MultiHeadAttention's key or attention_mask)
// travel in the call's input list after the positional ones: with n inputs and k keywords, inputs
// [0, n-k) are positional and input n-k+j was passed as `keywords[j]`; a list keyword
// (initial_state=[h, c]) repeats its name. Symbolic calls record them as node inputs, so the
// functional graph and the saved node (args / kwargs) keep them.
struct CallArgs {
  std::optional<bool> training;
  // Keras's `mask=`: one mask per input (undefined = none), overriding the masks attached to the
  // inputs (Tensor::keras_mask). Eager calls only; a functional graph propagates attached masks.
  TensorList mask;
  std::vector<std::string> keywords;
  // Non-tensor keyword arguments the layer's call() takes (use_causal_mask,
  // return_attention_scores), recorded in the node as Keras records them.
  json options = json::object();
};

// What call() sees: the resolved training mode, the masks of the inputs (Keras's `mask`
// argument: one entry per input, undefined where an input has none; empty when no input has one)
// and the call's keywords and options (CallArgs).
struct CallContext {
  bool training = false;
  TensorList masks;
  std::vector<std::string> keywords;
  json options = json::object();

  // The mask of input i; undefined when it has none.
  Tensor mask(size_t i = 0) const { return i < masks.size() ? masks[i] : Tensor(); }
  // How many leading inputs of `n` were passed positionally.
  size_t positional_count(size_t n) const;
  // The inputs passed as keyword `name`, in order (empty when not passed).
  TensorList keyword(const TensorList& inputs, const std::string& name) const;
};

// Base options every layer accepts (the Keras base config keys).
struct LayerOptions {
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

// One call of a layer on symbolic tensors: a node of the functional graph.
struct LayerNode {
  std::vector<KerasTensor> inputs;
  std::vector<TensorSpec> outputs;
  CallArgs args;
};

class Layer : public std::enable_shared_from_this<Layer> {
 public:
  explicit Layer(const LayerOptions& options = {});
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  // Keras class name ("Dense"); also the registry key.
  virtual std::string class_name() const = 0;

  // ---- identity ----
  // The name; snake_case(class_name()) until a model or the user names it.
  std::string name() const;
  bool has_name() const { return !name_.empty(); }
  void set_name(const std::string& name);

  // ---- dtype policy (dtype_policy.h) ----
  const DTypePolicy& dtype_policy() const { return policy_; }
  DType compute_dtype() const { return policy_.compute_dtype; }
  DType variable_dtype() const { return policy_.variable_dtype; }

  // ---- trainability ----
  bool trainable() const { return trainable_; }
  // Freezes/unfreezes this layer and every sublayer; variables follow (a variable created
  // non-trainable, such as a moving mean, never becomes trainable).
  virtual void set_trainable(bool trainable);

  // ---- weights ----
  // Own weights in creation order, then sublayers' weights (deduplicated, shared layers once).
  std::vector<Variable> weights() const;
  std::vector<Variable> trainable_weights() const;
  std::vector<Variable> non_trainable_weights() const;
  int64_t count_params() const;
  // Layers nested in this one (a model's layers); empty for plain layers.
  virtual std::vector<LayerPtr> sublayers() const { return {}; }
  // Regularization penalties of own and sublayer weights for the current values (tape-recorded).
  TensorList regularization_losses() const;
  // Copies values into the weights, in weights() order; ShapeError naming the path on mismatch.
  void set_weights(const TensorList& values);
  TensorList get_weights() const;  // copies

  // ---- building ----
  bool built() const { return built_; }
  // Builds once for `input_shapes` (batch extent -1 allowed); validates on every call.
  void ensure_built(const std::vector<Shape>& input_shapes);
  virtual void build(const std::vector<Shape>& input_shapes) {}
  // Output shapes for input shapes. The default probes call() on zeros with batch 1 and no tape;
  // layers override it for speed and for exact symbolic shapes.
  virtual std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes);
  // Output dtypes for the dtypes the layer's call receives (after its input casting, see
  // dtype_policy.h); default: the compute dtype if the layer has weights, else the first input's.
  virtual std::vector<DType> compute_output_dtype(const std::vector<DType>& input_dtypes);
  // Throws ShapeError (naming this layer and both shapes) when inputs do not fit; called before
  // build and before every call. The default accepts anything.
  virtual void validate_input(const std::vector<Shape>& input_shapes) const {}
  // The shapes the layer was built for (batch extent -1).
  const std::vector<Shape>& build_input_shapes() const { return build_shapes_; }

  // ---- calling ----
  Tensor operator()(const Tensor& x, CallArgs args = {});
  TensorList operator()(const TensorList& xs, CallArgs args = {});
  KerasTensor operator()(const KerasTensor& x, CallArgs args = {});
  std::vector<KerasTensor> operator()(const std::vector<KerasTensor>& xs, CallArgs args = {});
  // The forward computation on concrete tensors.
  virtual TensorList call(const TensorList& inputs, const CallContext& ctx) = 0;

  // ---- masking (Keras's supports_masking / compute_mask) ----
  // Whether outputs carry a mask computed by compute_mask(). A layer that does not support
  // masking drops the masks of its inputs (Keras warns; so does nothing here).
  virtual bool supports_masking() const { return false; }
  // The masks of the outputs, one per output (undefined = none), for `inputs` and their `masks`
  // (CallContext::masks). Called after call() for outputs that have no mask attached yet.
  // Default: every output gets the first input's mask (Keras: previous_mask passes through).
  virtual TensorList compute_mask(const TensorList& inputs, const TensorList& masks) const;

  // ---- config ----
  // Keras config: base keys (name, trainable, dtype) plus the layer's options.
  virtual json get_config() const;
  // Symbolic calls recorded on this layer (functional API), by node index; an entry is null once
  // no KerasTensor or Model holds that call any more (a layer does not own its nodes).
  std::vector<std::shared_ptr<const LayerNode>> inbound_nodes() const;

  // Keras's layer.output / layer.input: the tensors of this layer's first call still held by a
  // model or a tensor, so Model(base->input(), base->get_layer("block_13_expand_relu")->output())
  // builds a feature extractor. Models override them with their own inputs and outputs.
  // ValueError when the layer has no such call, or the call has several outputs (inputs).
  virtual KerasTensor output();
  virtual KerasTensor input();
  // The same for call `node_index` (get_output_at(1): the second call of a shared layer); all of
  // its output (input) tensors. ValueError naming the calls that exist otherwise.
  std::vector<KerasTensor> get_outputs_at(int node_index);
  std::vector<KerasTensor> get_inputs_at(int node_index);

  // Sets weight paths to prefix + name() + "/" + weight name; models pass their prefix down.
  virtual void update_paths(const std::string& prefix);

  // "Layer 'dense_1' (Dense)": the `where` of this layer's error messages.
  std::string where() const;

 protected:
  // Creates a weight (decision 5: path from the layer name). `trainable=false` makes a variable
  // that is never trained (moving statistics). `constraint` is attached to the variable, so every
  // optimizer applies it after updating it. `dtype`: the policy's variable dtype when not given;
  // others are for non-trainable state (Normalization's int64 count). Throws StateError outside
  // build().
  Variable add_weight(const std::string& name, const Shape& shape, const InitializerPtr& initializer,
                      bool trainable = true, const RegularizerPtr& regularizer = nullptr,
                      const ConstraintPtr& constraint = nullptr, std::optional<DType> dtype = std::nullopt);
  // Seeded stream for layers that draw random numbers at call time (Dropout); seeded from
  // `seed` if given, else from the global generator when first used.
  Generator& generator(std::optional<uint64_t> seed = std::nullopt);
  // Base config keys, for subclasses that build their config on top.
  json base_config() const;
  // Records a node directly (InputLayer's node 0, which has no inputs); returns its index. The
  // caller keeps `node` alive: the layer holds it weakly.
  int record_node(const std::shared_ptr<const LayerNode>& node);
  // Marks the layer built without calling build() (layers that need no input shape).
  void mark_built(const std::vector<Shape>& input_shapes);
  // The keywords and options of the call being processed (CallArgs), for build() and
  // compute_output_shape(), which see only shapes; outside a call, the last call's.
  const CallArgs& current_call_args() const { return current_args_; }
  // Containers (models) leave the casting of inputs to the layers they hold.
  bool autocast_inputs_ = true;

 private:
  struct Weight {
    std::string name;
    Variable variable;
    bool trainable_by_design;
    RegularizerPtr regularizer;
    ConstraintPtr constraint;
  };
  std::string name_;
  bool trainable_ = true;
  bool built_ = false;
  bool in_build_ = false;
  DTypePolicy policy_;
  std::string path_prefix_;
  std::vector<Shape> build_shapes_;
  std::vector<Weight> own_weights_;
  std::vector<std::weak_ptr<const LayerNode>> nodes_;  // weak: see keras_tensor.h
  std::optional<Generator> generator_;
  CallArgs current_args_;
};

// Keras snake_case of a class name: Conv2D -> conv2d, ReLU -> re_lu, UpSampling2D -> up_sampling2d.
std::string snake_case(const std::string& class_name);

// Replaces the batch extent (axis 0) of each shape by -1.
std::vector<Shape> with_unknown_batch(std::vector<Shape> shapes);

// The training mode inherited by nested calls (set while a model runs a layer).
bool current_training();
class TrainingScope {
 public:
  explicit TrainingScope(bool training);
  ~TrainingScope();

 private:
  bool previous_;
};

}  // namespace keras
