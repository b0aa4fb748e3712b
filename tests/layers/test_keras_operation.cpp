// Keras 3 operations and tf_keras TFOpLambda functions as OpLayers (layers/keras_operation.h):
// every supported operation with tensors and constants in either order computes what Keras
// computes (x + 3.0, 2.0 - x, x / y, relu6(x), ...), differentiates, keeps its Keras call, and
// unknown operations and functions are named in the error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "backend/ops.h"
#include "backend/random.h"
#include "layers/keras_operation.h"
#include "support/expect_error.h"
#include "support/gradcheck.h"

using namespace keras;
using keras::testing::expect_error;
using layers::KerasOperationCall;

namespace {

constexpr const char* kNumpy = "keras.src.ops.numpy";
constexpr const char* kNn = "keras.src.ops.nn";
constexpr std::nullopt_t T = std::nullopt;  // a tensor argument

struct Case {
  KerasOperationCall call;
  std::function<double(double, double)> expected;  // (x, y): the inputs in order (y unused for one)
};

std::vector<Case> cases() {
  return {
      {{kNumpy, "Add", {T, T}}, [](double x, double y) { return x + y; }},
      {{kNumpy, "Add", {T, 3.0}}, [](double x, double) { return x + 3; }},
      {{kNumpy, "Add", {3.0, T}}, [](double x, double) { return 3 + x; }},
      {{kNumpy, "Subtract", {T, T}}, [](double x, double y) { return x - y; }},
      {{kNumpy, "Subtract", {T, 1.0}}, [](double x, double) { return x - 1; }},
      {{kNumpy, "Subtract", {2.0, T}}, [](double x, double) { return 2 - x; }},
      {{kNumpy, "Multiply", {T, T}}, [](double x, double y) { return x * y; }},
      {{kNumpy, "Multiply", {T, 1.0 / 6}}, [](double x, double) { return x / 6; }},
      {{kNumpy, "Multiply", {0.5, T}}, [](double x, double) { return 0.5 * x; }},
      {{kNumpy, "TrueDivide", {T, T}}, [](double x, double y) { return x / y; }},
      {{kNumpy, "TrueDivide", {T, 4.0}}, [](double x, double) { return x / 4; }},
      {{kNumpy, "TrueDivide", {4.0, T}}, [](double x, double) { return 4 / x; }},
      {{kNn, "Relu", {T}}, [](double x, double) { return std::max(x, 0.0); }},
      {{kNn, "Relu6", {T}}, [](double x, double) { return std::min(std::max(x, 0.0), 6.0); }},
  };
}

TensorList inputs_for(const KerasOperationCall& call, DType dtype) {
  TensorList in;
  // Away from 0 (division) and from relu's kinks, so central differences see one piece.
  const std::vector<double> a = {-7.5, -2.5, 0.75, 1.5, 3.25, 8.5}, b = {2.0, -1.25, 0.5, 4.0, -3.0, 1.75};
  for (size_t i = 0; i < call.args.size(); ++i)
    if (!call.args[i]) in.push_back(Tensor::from_vector(in.empty() ? a : b, {2, 3}).astype(dtype));
  return in;
}

std::string label(const KerasOperationCall& c) {
  std::string s = c.class_name + "(";
  for (size_t i = 0; i < c.args.size(); ++i) s += (i ? ", " : "") + (c.args[i] ? json(*c.args[i]).dump() : "x");
  return s + ")";
}

}  // namespace

TEST(KerasOperation, EveryOperationComputesWhatKerasComputes) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(label(c.call));
    auto layer = layers::keras_operation_layer(c.call, "op", "test");
    ASSERT_TRUE(layer->keras_call());
    EXPECT_EQ(*layer->keras_call(), c.call);
    EXPECT_EQ(layer->class_name(), c.call.class_name);
    EXPECT_EQ(layer->get_config(), json({{"name", "op"}}));
    TensorList in = inputs_for(c.call, DType::float32);
    Tensor y = (*layer)(in)[0];
    ASSERT_EQ(y.shape(), (Shape{2, 3}));
    for (int64_t i = 0; i < 6; ++i) {
      const double x0 = element_as_double(in[0], i), x1 = in.size() > 1 ? element_as_double(in[1], i) : 0;
      EXPECT_NEAR(element_as_double(y, i), c.expected(x0, x1), 1e-6) << "element " << i;
    }
  }
}

TEST(KerasOperation, GradientsFloat64) {
  for (const Case& c : cases()) {
    auto layer = layers::keras_operation_layer(c.call, "op", "test");
    keras::testing::check_gradients(label(c.call), [&](const TensorList& in) { return (*layer)(in)[0]; },
                                    inputs_for(c.call, DType::float64));
  }
}

TEST(KerasOperation, BinaryOperationsBroadcast) {
  auto layer = layers::keras_operation_layer({kNumpy, "Add", {T, T}}, "add", "test");
  Tensor y = (*layer)(TensorList{Tensor::ones({2, 3, 3, 4}), Tensor::ones({2, 1, 1, 4})})[0];
  EXPECT_EQ(y.shape(), (Shape{2, 3, 3, 4}));
}

// tf_keras names (TFOpLambda "function") map onto the same Keras 3 operations, and back.
TEST(KerasOperation, TfFunctionsMapToKeras3Operations) {
  const std::vector<std::pair<std::string, std::string>> names = {
      {"__operators__.add", "Add"}, {"math.add", "Add"},          {"math.subtract", "Subtract"},
      {"math.multiply", "Multiply"}, {"math.truediv", "TrueDivide"}, {"nn.relu", "Relu"}, {"nn.relu6", "Relu6"}};
  for (const auto& [function, cls] : names) {
    KerasOperationCall call = layers::keras_call_of_tf_function(function, {T, 2.0}, "test");
    EXPECT_EQ(call.class_name, cls) << function;
    EXPECT_EQ(call.args, (std::vector<std::optional<double>>{T, 2.0}));
    auto [back, arity] = layers::tf_function_of(call.module, cls, "test");
    EXPECT_EQ(arity, cls.rfind("Relu", 0) == 0 ? 1 : 2) << function;
    if (function != "math.add") EXPECT_EQ(back, function);  // tf_keras writes __operators__.add
  }
  EXPECT_TRUE(layers::is_keras_operation_module("keras.src.ops.numpy"));
  EXPECT_FALSE(layers::is_keras_operation_module("keras.layers"));
}

TEST(KerasOperation, UnknownOperationsAndBadArgumentsAreNamed) {
  expect_error<TypeError>([] { layers::keras_call_of_tf_function("math.reduce_mean", {T}, "layer 'tf.math.reduce_mean'"); },
                          {"layer 'tf.math.reduce_mean'", "'math.reduce_mean'", "__operators__.add", "nn.relu6"});
  expect_error<TypeError>([] { layers::keras_operation_layer({kNumpy, "Mean", {T}}, "mean", "layer 'mean'"); },
                          {"layer 'mean'", "'keras.src.ops.numpy.Mean'", "keras.src.ops.numpy.Add"});
  expect_error<TypeError>([] { layers::tf_function_of(kNn, "Gelu", "here"); }, {"here", "Gelu"});
  expect_error<ValueError>([] { layers::keras_operation_layer({kNumpy, "Add", {T, 1.0, 2.0}}, "add", "layer 'add'"); },
                           {"layer 'add' (Add)", "2 argument(s)", "(tensor, 1.0, 2.0)"});
  expect_error<ValueError>([] { layers::keras_operation_layer({kNumpy, "Add", {1.0, 2.0}}, "add", "layer 'add'"); },
                           {"at least one a tensor"});
  expect_error<ValueError>([] { layers::keras_operation_layer({kNn, "Relu6", {T, T}}, "r", "layer 'r'"); },
                           {"1 argument(s)"});
}
