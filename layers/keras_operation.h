// Keras 3 operation nodes and tf_keras TFOpLambda layers as OpLayers (layers/op_layer.h): the
// arithmetic keras.applications configs hold besides layers.
//
// Keras 3 writes `x + 3.0` on a KerasTensor as an operation node {"module": "keras.src.ops.numpy",
// "class_name": "Add", "config": {"name": "add"}, "registered_name": "Add"} called with args
// [x, 3.0]; tf_keras writes the same as a TFOpLambda layer {"function": "__operators__.add"}
// called as f(x, y=3.0). Both become one OpLayer running the matching registered op, which
// remembers the Keras 3 call (OpLayerImpl::keras_call) so that it is written back the Keras 3 way.
//
// Supported (Keras 3 class / tf_keras functions -> op):
//   numpy.Add        __operators__.add, math.add   add, add_scalar
//   numpy.Subtract   math.subtract                 subtract, add_scalar(-c), rsubtract_scalar
//   numpy.Multiply   math.multiply                 multiply, multiply_scalar
//   numpy.TrueDivide math.truediv                  divide, divide_scalar, rdivide_scalar
//   nn.Relu          nn.relu                       relu
//   nn.Relu6         nn.relu6                      relu6
// Binary operations take two tensors (NumPy broadcasting) or a tensor and a constant in either
// order; unary ones one tensor.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "layers/op_layer.h"

namespace keras::layers {

// An OpLayer named `name` computing `call` (its keras_call() is `call`; its class_name()
// `class_name`, default call.class_name). TypeError naming `where` and listing the supported
// operations for an unknown module/class; ValueError naming `where` for arguments the operation
// does not take (wrong count, no tensor).
std::shared_ptr<OpLayerImpl> keras_operation_layer(const KerasOperationCall& call, const std::string& name,
                                                   const std::string& where, const std::string& class_name = "");

// True for a module of Keras 3 operations ("keras.src.ops.numpy", "keras.src.ops.nn", ...).
bool is_keras_operation_module(const std::string& module);
// The module of supported operation `class_name` ("Add" -> "keras.src.ops.numpy"); "" if none.
// For Keras 3's legacy .h5 configs, which write operation nodes without their module.
std::string keras_operation_module(const std::string& class_name);

// The Keras 3 call of tf_keras function `function` ("math.multiply", the TFOpLambda config's
// "function") with positional arguments `args` (tensor = nullopt). TypeError naming the function,
// `where` and the supported functions for an unknown one.
KerasOperationCall keras_call_of_tf_function(const std::string& function, std::vector<std::optional<double>> args,
                                             const std::string& where);

// The tf_keras function of a Keras 3 operation (TFOpLambda "function", for Keras 2 configs) and
// its arity (1 or 2). TypeError naming `where` for an unknown operation.
std::pair<std::string, int> tf_function_of(const std::string& module, const std::string& class_name,
                                           const std::string& where);

}  // namespace keras::layers
