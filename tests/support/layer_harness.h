// The layer test harness: one call checks the contract every layer must keep (DESIGN.md §5).
//
//   keras::testing::run_layer_harness({
//       .name = "Dense relu",
//       .make = [] { return keras::LayerPtr(keras::layers::Dense({.units = 4, .activation = "relu"})); },
//       .input_shape = {3, 5},
//       .weight_shapes = {{5, 4}, {4}},
//   });
//
// Checks, each on fresh layers from `make` (failures are reported through gtest, tagged a-i;
// KERAS_HARNESS_CHECKS=<letters> runs only those, e.g. "h" on a GPU machine):
//  (a) eager output shapes == compute_output_shape (concrete and unknown batch) == the symbolic
//      call's KerasTensor shapes, and the symbolically built layer runs eagerly alike;
//  (b) weight count, shapes, trainable count and unique "<layer>/<weight>" paths;
//  (c) config round trip: get_config -> JSON text -> layer_from_config -> get_config equal, and
//      the rebuilt layer given the same weights gives the same outputs;
//  (d) weights round trip through plain host arrays into a fresh layer: same weights, same
//      outputs; set_weights rejects a wrong count or shape;
//  (e) one SGD step on sum(mean((out - target)^2)) lowers the loss (layers with trainable
//      weights); the gradient always reaches the floating inputs;
//  (f) frozen: set_trainable(false) leaves no trainable weights, records no weight gradients,
//      keeps passing gradients to the inputs, and a step leaves every weight bit-identical;
//      unfreezing restores the trainable weights;
//  (g) float32 gradient check (keras::testing::check_gradients) w.r.t. the floating inputs and
//      the trainable weights, on the tiny gradcheck inputs;
//  (h) on a device: built and called on Device::cuda(0) (a real GPU, else SimulatedCuda: CPU
//      kernels behind the device, see support/simulated_device.h) with the same weights, the
//      layer gives the CPU's outputs and gradients (within 1e-5 of the largest magnitude when
//      simulated: ops may take other paths off the CPU, e.g. the recurrent layers' plain loops
//      instead of oneDNN's; 1e-4 on a GPU), every output and gradient on the device;
//  (i) under mixed_bfloat16: float32 weights, bfloat16 outputs near the float32 ones, float32
//      gradients (support/mixed_precision_check.h).
// Multi-input layers (Add, Concatenate) give `input_shapes`; multi-output layers are checked on
// every output. Layers of integer inputs (Embedding's ids) set `input_dtype` (ids drawn uniformly
// from [0, input_limit)); checks (e)-(g) then differentiate only w.r.t. the floating inputs and the
// weights, and integer inputs must get no gradient.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backend/autodiff.h"
#include "backend/device_scope.h"
#include "backend/ops.h"
#include "backend/random.h"
#include "layers/input_layer.h"
#include "layers/layer.h"
#include "layers/layer_registry.h"
#include "support/gradcheck.h"
#include "support/layer_harness_spec.h"
#include "support/mixed_precision_check.h"
#include "support/simulated_device.h"

namespace keras::testing {
namespace harness_detail {

inline void check_shapes(const LayerHarnessSpec& s, const CallArgs& args) {
  SCOPED_TRACE(s.name + " (a) output shape == inferred shape == symbolic shape");
  std::vector<Shape> shapes = shapes_of(s);
  LayerPtr layer = s.make();
  TensorList xs = inputs_for(s, shapes, s.seed);
  TensorList ys = (*layer)(xs, args);
  std::vector<Shape> inferred = layer->compute_output_shape(shapes);
  std::vector<Shape> unknown;
  for (const auto& sh : shapes) unknown.push_back(unknown_batch(sh));
  std::vector<Shape> inferred_unknown = layer->compute_output_shape(unknown);
  ASSERT_EQ(inferred.size(), ys.size());
  ASSERT_EQ(inferred_unknown.size(), ys.size());
  for (size_t i = 0; i < ys.size(); ++i) {
    EXPECT_EQ(shape_str(inferred[i]), shape_str(ys[i].shape())) << "output " << i;
    EXPECT_EQ(shape_str(inferred_unknown[i]), shape_str(unknown_batch(ys[i].shape()))) << "output " << i;
  }

  LayerPtr sym = s.make();
  std::vector<KerasTensor> kin;
  for (size_t i = 0; i < shapes.size(); ++i)
    kin.push_back(layers::Input(Shape(shapes[i].begin() + 1, shapes[i].end()), {.dtype = dtype_name(xs[i].dtype())}));
  std::vector<KerasTensor> kout = (*sym)(kin, args);
  ASSERT_EQ(kout.size(), ys.size());
  for (size_t i = 0; i < ys.size(); ++i) {
    EXPECT_EQ(shape_str(kout[i].shape), shape_str(unknown_batch(ys[i].shape()))) << "output " << i;
    EXPECT_EQ(dtype_name(kout[i].dtype), dtype_name(ys[i].dtype())) << "output " << i;
    EXPECT_TRUE(kout[i].layer.get() == sym.get());
  }
  TensorList ys_sym = (*sym)(xs, args);
  ASSERT_EQ(ys_sym.size(), ys.size());
  for (size_t i = 0; i < ys.size(); ++i) EXPECT_EQ(shape_str(ys_sym[i].shape()), shape_str(ys[i].shape()));
}

inline void check_weights(const LayerHarnessSpec& s, const CallArgs& args) {
  SCOPED_TRACE(s.name + " (b) weights");
  LayerPtr layer = s.make();
  (*layer)(inputs_for(s, shapes_of(s), s.seed), args);
  auto ws = layer->weights();
  ASSERT_EQ(ws.size(), s.weight_shapes.size());
  int64_t params = 0;
  std::vector<std::string> paths;
  for (size_t i = 0; i < ws.size(); ++i) {
    EXPECT_EQ(shape_str(ws[i].shape()), shape_str(s.weight_shapes[i])) << ws[i].path();
    params += shape_numel(s.weight_shapes[i]);
    EXPECT_EQ(ws[i].path().rfind(layer->name() + "/", 0), 0u) << ws[i].path();
    EXPECT_EQ(std::count(paths.begin(), paths.end(), ws[i].path()), 0) << "duplicate path " << ws[i].path();
    paths.push_back(ws[i].path());
  }
  EXPECT_EQ(layer->count_params(), params);
  EXPECT_EQ(layer->trainable_weights().size(), s.trainable_count.value_or(ws.size()));
  EXPECT_EQ(layer->trainable_weights().size() + layer->non_trainable_weights().size(), ws.size());
}

inline void check_config(const LayerHarnessSpec& s, const CallArgs& args) {
  SCOPED_TRACE(s.name + " (c) config round trip");
  LayerPtr layer = s.make();
  TensorList xs = inputs_for(s, shapes_of(s), s.seed);
  (*layer)(xs, args);
  json config = layer->get_config();
  for (const char* key : {"name", "trainable", "dtype"}) EXPECT_TRUE(config.contains(key)) << key;
  LayerPtr rebuilt = layer_from_config(layer->class_name(), json::parse(config.dump()));
  ASSERT_TRUE(rebuilt);
  EXPECT_EQ(rebuilt->class_name(), layer->class_name());
  EXPECT_EQ(rebuilt->get_config(), config) << "original: " << config.dump()
                                           << "\nrebuilt:  " << rebuilt->get_config().dump();
  (*rebuilt)(xs, args);
  rebuilt->set_weights(layer->get_weights());
  EXPECT_TRUE(all_bit_equal((*rebuilt)(xs, args), (*layer)(xs, args))) << "rebuilt layer computes differently";
}

inline void check_weight_round_trip(const LayerHarnessSpec& s, const CallArgs& args) {
  SCOPED_TRACE(s.name + " (d) weights round trip");
  LayerPtr layer = s.make();
  TensorList xs = inputs_for(s, shapes_of(s), s.seed);
  (*layer)(xs, args);
  // Through plain host arrays, as a weights file stores them.
  std::vector<std::vector<float>> stored;
  std::vector<Shape> shapes;
  for (const auto& w : layer->get_weights()) {
    stored.push_back(w.to_vector<float>());
    shapes.push_back(w.shape());
  }
  LayerPtr fresh = s.make();
  (*fresh)(xs, args);
  TensorList loaded;
  for (size_t i = 0; i < stored.size(); ++i) loaded.push_back(Tensor::from_vector(stored[i], shapes[i]));
  fresh->set_weights(loaded);
  EXPECT_TRUE(all_bit_equal(layer->get_weights(), fresh->get_weights())) << "weights differ after set_weights";
  EXPECT_TRUE(all_bit_equal((*fresh)(xs, args), (*layer)(xs, args))) << "outputs differ after set_weights";

  TensorList too_many = loaded;
  too_many.push_back(Tensor::zeros({1}));
  EXPECT_THROW(fresh->set_weights(too_many), ValueError);
  if (!loaded.empty()) {
    TensorList wrong = loaded;
    Shape bigger = wrong[0].shape();
    if (bigger.empty()) bigger.push_back(2);
    else bigger.back() += 1;
    wrong[0] = Tensor::zeros(bigger);
    EXPECT_THROW(fresh->set_weights(wrong), ShapeError);
  }
}

inline void expect_input_gradients(const TensorList& xs, const TensorList& grads) {
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!is_floating(xs[i].dtype())) {
      EXPECT_FALSE(grads[i].defined()) << "a gradient reached integer input " << i;
      continue;
    }
    ASSERT_TRUE(grads[i].defined()) << "no gradient reached input " << i;
    EXPECT_EQ(shape_str(grads[i].shape()), shape_str(xs[i].shape()));
    double norm = 0;
    for (double g : grads[i].to_vector<double>()) norm += g * g;
    EXPECT_GT(norm, 0.0) << "the gradient of input " << i << " is all zeros";
  }
}

inline void check_training_step(const LayerHarnessSpec& s, const CallArgs& args) {
  SCOPED_TRACE(s.name + " (e) one training step lowers the loss");
  LayerPtr layer = s.make();
  TensorList xs = inputs_for(s, shapes_of(s), s.seed);
  TensorList targets = targets_for((*layer)(xs, args), s.seed + 1);
  auto tw = layer->trainable_weights();
  TensorList xg = watched(xs);
  TensorList sources = xg;
  for (const auto& v : tw) sources.push_back(v.value());
  double before;
  TensorList grads;
  {
    GradientTape tape;
    Tensor loss = loss_of((*layer)(xg, args), targets);
    ASSERT_TRUE(loss.defined()) << "the layer has no floating output";
    before = loss.item();
    grads = tape.gradient(loss, sources);
  }
  expect_input_gradients(xs, grads);
  if (tw.empty()) return;
  {
    NoGradGuard no_grad;
    for (size_t i = 0; i < tw.size(); ++i) {
      const Tensor& g = grads[xs.size() + i];
      ASSERT_TRUE(g.defined()) << "no gradient for " << tw[i].path();
      EXPECT_EQ(shape_str(g.shape()), shape_str(tw[i].shape())) << tw[i].path();
      tw[i].assign(ops::subtract(tw[i].value(), ops::multiply(g, s.learning_rate)));
    }
  }
  double after = loss_of((*layer)(xs, args), targets).item();
  EXPECT_LT(after, before);
}

inline void check_frozen(const LayerHarnessSpec& s, const CallArgs& args) {
  SCOPED_TRACE(s.name + " (f) frozen weights");
  LayerPtr layer = s.make();
  TensorList xs = inputs_for(s, shapes_of(s), s.seed);
  TensorList targets = targets_for((*layer)(xs, args), s.seed + 1);
  size_t n = layer->weights().size(), trainable = layer->trainable_weights().size();
  layer->set_trainable(false);
  EXPECT_FALSE(layer->trainable());
  EXPECT_TRUE(layer->trainable_weights().empty());
  EXPECT_EQ(layer->non_trainable_weights().size(), n);
  EXPECT_EQ(layer->get_config().value("trainable", true), false);
  TensorList before = layer->get_weights();
  TensorList xg = watched(xs);
  TensorList sources = xg;
  auto ws = layer->weights();
  for (const auto& v : ws) sources.push_back(v.value());
  TensorList grads;
  {
    GradientTape tape;
    grads = tape.gradient(loss_of((*layer)(xg, args), targets), sources);
  }
  for (size_t i = 0; i < xs.size(); ++i) {
    if (is_floating(xs[i].dtype())) {
      EXPECT_TRUE(grads[i].defined()) << "a frozen layer must pass gradients to input " << i;
    }
  }
  {
    NoGradGuard no_grad;
    for (size_t i = 0; i < ws.size(); ++i) {
      const Tensor& g = grads[xs.size() + i];
      EXPECT_FALSE(g.defined()) << "gradient recorded for frozen " << ws[i].path();
      if (g.defined()) ws[i].assign(ops::subtract(ws[i].value(), ops::multiply(g, s.learning_rate)));
    }
  }
  (*layer)(xs, args);  // a forward pass must not touch frozen weights either
  TensorList after = layer->get_weights();
  for (size_t i = 0; i < n; ++i) EXPECT_TRUE(bit_equal(before[i], after[i])) << ws[i].path() << " changed";
  layer->set_trainable(true);
  EXPECT_EQ(layer->trainable_weights().size(), trainable);
}

inline void check_layer_gradients(const LayerHarnessSpec& s, const CallArgs& args) {
  SCOPED_TRACE(s.name + " (g) gradient check");
  LayerPtr layer = s.make();
  TensorList xs = inputs_for(s, gradcheck_shapes_of(s), s.seed + 2);
  TensorList outs = (*layer)(xs, args);
  auto tw = layer->trainable_weights();
  TensorList inputs = xs;
  for (const auto& v : tw) inputs.push_back(v.value().detach().clone());
  size_t n_in = xs.size();
  for (size_t o = 0; o < outs.size(); ++o) {
    if (!is_floating(outs[o].dtype())) continue;
    check_gradients(s.name + " output " + std::to_string(o), [&](const TensorList& in) {
      ScopedRebind rebind(tw, in, n_in);
      return (*layer)(TensorList(in.begin(), in.begin() + n_in), args)[o];
    }, inputs);
  }
}

// The outputs and the gradients (inputs, then trainable weights) of one call of `layer`.
inline std::pair<TensorList, TensorList> outputs_and_gradients(Layer& layer, const TensorList& xs, const CallArgs& args,
                                                               const TensorList& targets) {
  TensorList xg = watched(xs);
  TensorList sources = xg;
  for (const auto& v : layer.trainable_weights()) sources.push_back(v.value());
  GradientTape tape;
  TensorList outs = layer(xg, args);
  Tensor loss = loss_of(outs, targets);
  TensorList grads = loss.defined() ? tape.gradient(loss, sources) : TensorList();
  return {outs, grads};
}

// a on `device`, within tol of b's largest magnitude (at least 1).
inline void expect_same(const Tensor& a, const Tensor& b, Device device, double tol, const std::string& what) {
  ASSERT_EQ(a.defined(), b.defined()) << what;
  if (!a.defined()) return;
  EXPECT_EQ(a.device(), device) << what << " left the device";
  Tensor host = a.to(Device::cpu());
  ASSERT_EQ(shape_str(host.shape()), shape_str(b.shape())) << what;
  std::vector<double> x = host.to_vector<double>(), y = b.to_vector<double>();
  double scale = 0, diff = 0;
  for (size_t i = 0; i < y.size(); ++i) scale = std::max(scale, std::fabs(y[i]));
  for (size_t i = 0; i < y.size(); ++i) diff = std::max(diff, std::fabs(x[i] - y[i]));
  EXPECT_LE(diff, tol * std::max(scale, 1.0)) << what;
}

inline void check_on_device(const LayerHarnessSpec& s, const CallArgs& args) {
  SCOPED_TRACE(s.name + " (h) on a device");
  test_support::SimulatedCuda simulated;
  const Device device = Device::cuda(0);
  TensorList xs = inputs_for(s, shapes_of(s), s.seed + 3);
  LayerPtr cpu_layer = s.make();
  TensorList targets = targets_for((*cpu_layer)(xs, args), s.seed + 4);
  auto [cpu_outs, cpu_grads] = outputs_and_gradients(*cpu_layer, xs, args, targets);

  TensorList xd, td;
  for (const auto& x : xs) xd.push_back(x.to(device));
  for (const auto& t : targets) td.push_back(t.to(device));
  DeviceScope scope(device);  // the layer's weights and constants land on the device
  LayerPtr dev_layer = s.make();
  (*dev_layer)(xd, args);
  dev_layer->set_weights(cpu_layer->get_weights());
  for (const auto& v : dev_layer->weights()) EXPECT_EQ(v.value().device(), device) << v.path() << " off the device";
  auto [dev_outs, dev_grads] = outputs_and_gradients(*dev_layer, xd, args, td);
  const double tol = simulated.active() ? 1e-5 : 1e-4;
  ASSERT_EQ(dev_outs.size(), cpu_outs.size());
  for (size_t i = 0; i < cpu_outs.size(); ++i) expect_same(dev_outs[i], cpu_outs[i], device, tol, "output " + std::to_string(i));
  ASSERT_EQ(dev_grads.size(), cpu_grads.size());
  for (size_t i = 0; i < cpu_grads.size(); ++i) expect_same(dev_grads[i], cpu_grads[i], device, tol, "gradient " + std::to_string(i));
}

}  // namespace harness_detail

// KERAS_HARNESS_CHECKS=<letters from a-i> runs only those checks ("h" on a GPU machine, where CI
// has run the CPU's); unset or empty, all of them. Any other letter fails the test, so that a typo
// cannot skip every check.
inline bool harness_check_wanted(char check) {
  const char* only = std::getenv("KERAS_HARNESS_CHECKS");
  if (only == nullptr || *only == '\0') return true;
  for (const char* c = only; *c; ++c)
    if (*c < 'a' || *c > 'i')
      ADD_FAILURE() << "KERAS_HARNESS_CHECKS: expected letters from a to i, got '" << only << "'. Unset it to run every check.";
  return std::strchr(only, check) != nullptr;
}

// Runs checks (a)-(i) of the header comment on `spec` (those KERAS_HARNESS_CHECKS names).
inline void run_layer_harness(const LayerHarnessSpec& spec) {
  ASSERT_TRUE(spec.make) << spec.name << ": LayerHarnessSpec::make is required";
  ASSERT_TRUE(is_floating(spec.input_dtype) || spec.make_input || spec.input_limit > 0)
      << spec.name << ": integer inputs need input_limit (or make_input)";
  for (const auto& shape : harness_detail::shapes_of(spec))
    ASSERT_FALSE(shape.empty()) << spec.name << ": every input shape needs a batch axis";
  CallArgs args{spec.training};
  args.keywords = spec.keywords;
  args.options = spec.options;
  namespace d = harness_detail;
  if (harness_check_wanted('a')) d::check_shapes(spec, args);
  if (harness_check_wanted('b')) d::check_weights(spec, args);
  if (harness_check_wanted('c')) d::check_config(spec, args);
  if (harness_check_wanted('d')) d::check_weight_round_trip(spec, args);
  if (harness_check_wanted('e')) d::check_training_step(spec, args);
  if (harness_check_wanted('f')) d::check_frozen(spec, args);
  if (spec.check_gradients && harness_check_wanted('g')) d::check_layer_gradients(spec, args);
  if (harness_check_wanted('h')) d::check_on_device(spec, args);
  if (harness_check_wanted('i'))
    d::check_mixed_bfloat16(spec.make, d::inputs_for(spec, d::shapes_of(spec), spec.seed), args, spec.name);
}

}  // namespace keras::testing
