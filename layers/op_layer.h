// OpLayer: one registered op (backend/op_registry.h) as a weightless layer, so that keras::ops
// calls and arithmetic on KerasTensors (`a + b * 2.0`, layers/keras_tensor_ops.h) record nodes
// of the functional graph, as Keras 3 records operation nodes for keras.ops on KerasTensors.
//
// call() runs run_op(op, inputs, attrs), so gradients come from the op's GradFn on the tape;
// compute_output_shape() is the op's own shape function through infer_op: static shape
// inference with the op's error messages, prefixed by this layer's name.
//
// Serialisable only when it stands for a Keras 3 operation (keras_call(), set for the operation
// nodes and TFOpLambda layers read from configs, layers/keras_operation.h): it is then written as
// Keras 3 writes that operation. Otherwise get_config() throws NotImplementedError and a model
// holding it cannot be saved (use the merge layers Add, Multiply..., which are, for models you
// save). "OpLayer" is not in the layer registry. Unnamed OpLayers are named op_layer, op_layer_1...
// in a model.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "layers/layer_handle.h"

namespace keras::layers {

// A Keras 3 operation as a config writes it: the operation node {"module": module, "class_name":
// class_name, "config": {"name": ...}, "registered_name": class_name} and the positional arguments
// of its call, each the next input tensor (nullopt) or a constant: Add called as (x, 3.0) is
// {"keras.src.ops.numpy", "Add", {nullopt, 3.0}}.
struct KerasOperationCall {
  std::string module;
  std::string class_name;
  std::vector<std::optional<double>> args;
  bool operator==(const KerasOperationCall&) const = default;
};

class OpLayerImpl : public Layer {
 public:
  // `input_dtypes` are the dtypes the layer will be called with (shape inference needs them;
  // float32 is assumed for any not given). Throws NotImplementedError for an unknown op.
  OpLayerImpl(std::string op, Attrs attrs, std::vector<DType> input_dtypes = {}, const std::string& name = "");
  // "OpLayer", or the class of the config entry it was read from ("Add" for a Keras 3 operation
  // node, "TFOpLambda"), so that model.layers() lists the classes Keras lists.
  std::string class_name() const override { return class_name_.empty() ? "OpLayer" : class_name_; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  std::vector<DType> compute_output_dtype(const std::vector<DType>& input_dtypes) override;
  // {"name": name()} for an OpLayer with a keras_call(); NotImplementedError otherwise.
  json get_config() const override;
  const std::string& op() const { return op_; }
  const Attrs& attrs() const { return attrs_; }
  // The Keras 3 operation this layer computes, when it has one (see the file comment).
  // `class_name` names the entry it came from (default: call.class_name).
  const std::optional<KerasOperationCall>& keras_call() const { return keras_call_; }
  void set_keras_call(KerasOperationCall call, std::string class_name = "");

 private:
  std::vector<TensorSpec> infer(const std::vector<Shape>& shapes, const std::vector<DType>& dtypes) const;
  std::string op_;
  Attrs attrs_;
  const OpDef* def_;
  std::vector<DType> input_dtypes_;
  std::optional<KerasOperationCall> keras_call_;
  std::string class_name_;
};

// Applies op `op` to symbolic tensors: a fresh OpLayer called on `inputs`; one KerasTensor per
// output of the op. Shape and dtype errors come from the op's shape function, naming the layer.
std::vector<KerasTensor> apply_op(const std::string& op, const std::vector<KerasTensor>& inputs,
                                  const Attrs& attrs = {}, const std::string& name = "");
// Single-output form.
KerasTensor apply_op1(const std::string& op, const std::vector<KerasTensor>& inputs, const Attrs& attrs = {},
                      const std::string& name = "");

}  // namespace keras::layers
