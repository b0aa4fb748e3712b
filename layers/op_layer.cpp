#include "layers/op_layer.h"

#include <stdexcept>

namespace keras::layers {

OpLayerImpl::OpLayerImpl(std::string op, Attrs attrs, std::vector<DType> input_dtypes, const std::string& name)
    : Layer(LayerOptions{name}),
      op_(std::move(op)),
      attrs_(std::move(attrs)),
      def_(&OpRegistry::instance().find(op_)),
      input_dtypes_(std::move(input_dtypes)) {
  if (!def_->shape) fail<NotImplementedError>(where() + " op '" + op_ + "'", "a shape function", "none");
}

std::vector<TensorSpec> OpLayerImpl::infer(const std::vector<Shape>& shapes, const std::vector<DType>& dtypes) const {
  std::vector<TensorSpec> specs;
  for (size_t i = 0; i < shapes.size(); ++i) specs.push_back({shapes[i], i < dtypes.size() ? dtypes[i] : DType::float32});
  // The op's message names the op and the shapes; prefix it with the layer so a graph error
  // points at the node, keeping the error type.
  try {
    return def_->shape(specs, attrs_);
  } catch (const ShapeError& e) {
    throw ShapeError(where() + " op '" + op_ + "': " + e.what());
  } catch (const TypeError& e) {
    throw TypeError(where() + " op '" + op_ + "': " + e.what());
  } catch (const IndexError& e) {
    throw IndexError(where() + " op '" + op_ + "': " + e.what());
  } catch (const ValueError& e) {
    throw ValueError(where() + " op '" + op_ + "': " + e.what());
  } catch (const std::out_of_range&) {
    // Shape functions index their inputs with at(): too few inputs for the op.
    fail<ValueError>(where() + " op '" + op_ + "'", "the op's number of inputs", std::to_string(shapes.size()) + " input(s)");
  }
}

TensorList OpLayerImpl::call(const TensorList& inputs, const CallContext&) { return run_op(*def_, inputs, attrs_); }

std::vector<Shape> OpLayerImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  std::vector<Shape> out;
  for (const auto& spec : infer(shapes, input_dtypes_)) out.push_back(spec.shape);
  return out;
}

std::vector<DType> OpLayerImpl::compute_output_dtype(const std::vector<DType>& dtypes) {
  input_dtypes_ = dtypes;
  std::vector<DType> out;
  for (const auto& spec : infer(build_input_shapes(), dtypes)) out.push_back(spec.dtype);
  return out;
}

void OpLayerImpl::set_keras_call(KerasOperationCall call, std::string class_name) {
  class_name_ = class_name.empty() ? call.class_name : std::move(class_name);
  keras_call_ = std::move(call);
}

json OpLayerImpl::get_config() const {
  if (keras_call_) return {{"name", name()}};  // Keras 3 operations write their name only
  fail<NotImplementedError>(where() + " get_config", "a serialisable layer",
                            "op '" + op_ + "'" + (attrs_.values().empty() ? "" : " with " + attrs_.str()),
                            "Operators and keras::ops on KerasTensors are not serialisable yet; use merge layers "
                            "(Add, Subtract, Multiply, Concatenate...) in models you save.");
}

std::vector<KerasTensor> apply_op(const std::string& op, const std::vector<KerasTensor>& inputs, const Attrs& attrs,
                                  const std::string& name) {
  std::vector<DType> dtypes;
  for (const auto& t : inputs) dtypes.push_back(t.dtype);
  auto layer = std::make_shared<OpLayerImpl>(op, attrs, dtypes, name);
  return (*layer)(inputs);
}

KerasTensor apply_op1(const std::string& op, const std::vector<KerasTensor>& inputs, const Attrs& attrs,
                      const std::string& name) {
  auto out = apply_op(op, inputs, attrs, name);
  if (out.size() != 1)
    fail<ValueError>("apply_op1('" + op + "')", "an op with one output", std::to_string(out.size()) + " outputs",
                     "Use apply_op for multi-output ops.");
  return out[0];
}

}  // namespace keras::layers
