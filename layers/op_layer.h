// OpLayer: one registered op (backend/op_registry.h) as a weightless layer, so that keras::ops
// calls and arithmetic on KerasTensors (`a + b * 2.0`, layers/keras_tensor_ops.h) record nodes
// of the functional graph, as Keras 3 records operation nodes for keras.ops on KerasTensors.
//
// call() runs run_op(op, inputs, attrs), so gradients come from the op's GradFn on the tape;
// compute_output_shape() is the op's own shape function through infer_op: static shape
// inference with the op's error messages, prefixed by this layer's name.
//
// Not serialisable yet: get_config() throws NotImplementedError and "OpLayer" is not in the
// layer registry, so a model holding one cannot be saved (use the merge layers Add, Multiply...,
// which are, for models you save). Unnamed OpLayers are named op_layer, op_layer_1... in a model.
#pragma once
#include <string>
#include <vector>

#include "layers/layer_handle.h"

namespace keras::layers {

class OpLayerImpl : public Layer {
 public:
  // `input_dtypes` are the dtypes the layer will be called with (shape inference needs them;
  // float32 is assumed for any not given). Throws NotImplementedError for an unknown op.
  OpLayerImpl(std::string op, Attrs attrs, std::vector<DType> input_dtypes = {}, const std::string& name = "");
  std::string class_name() const override { return "OpLayer"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  std::vector<DType> compute_output_dtype(const std::vector<DType>& input_dtypes) override;
  json get_config() const override;  // throws NotImplementedError (see the file comment)
  const std::string& op() const { return op_; }
  const Attrs& attrs() const { return attrs_; }

 private:
  std::vector<TensorSpec> infer(const std::vector<Shape>& shapes, const std::vector<DType>& dtypes) const;
  std::string op_;
  Attrs attrs_;
  const OpDef* def_;
  std::vector<DType> input_dtypes_;
};

// Applies op `op` to symbolic tensors: a fresh OpLayer called on `inputs`; one KerasTensor per
// output of the op. Shape and dtype errors come from the op's shape function, naming the layer.
std::vector<KerasTensor> apply_op(const std::string& op, const std::vector<KerasTensor>& inputs,
                                  const Attrs& attrs = {}, const std::string& name = "");
// Single-output form.
KerasTensor apply_op1(const std::string& op, const std::vector<KerasTensor>& inputs, const Attrs& attrs = {},
                      const std::string& name = "");

}  // namespace keras::layers
