// Metric: the base of every metric (keras.metrics.Metric) and the registry of metrics by
// Keras name.
//
// A metric is stateful: update_state() accumulates batches, result() reads the value so far,
// reset_state() starts over (fit resets at each epoch). Metrics never record on the tape (their
// computations run under NoGradGuard) and accumulate in double on the host, so a long epoch
// does not lose precision. Used through shared handles (MetricPtr); concrete classes are
// …Impl, made by factories named like the Keras classes:
//   auto acc = keras::metrics::SparseCategoricalAccuracy();
//   acc->update_state(labels, probs);
//   double value = acc->result();
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/tensor.h"

namespace keras::metrics {

using json = nlohmann::json;

class Metric {
 public:
  explicit Metric(std::string name, std::string dtype = "float32");
  virtual ~Metric() = default;

  // Keras class name ("SparseCategoricalAccuracy"); also the registry key.
  virtual std::string class_name() const = 0;

  // Accumulates one batch. sample_weight (undefined = none) weighs samples as Keras does.
  // Throws ShapeError naming the metric and the shapes when they do not fit.
  virtual void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = {}) = 0;
  // The value so far (0 before any update, as Keras's divide_no_nan).
  virtual double result() const = 0;
  // The value as a tensor (float32 scalar here; vector-valued metrics override it).
  virtual Tensor result_tensor() const;
  virtual void reset_state() = 0;

  // Whether larger is better: "max", "min", or "unknown" (callbacks in mode "auto" need it).
  virtual std::string direction() const { return "unknown"; }

  // The accumulators as plain numbers (checkpointing, summing across workers). Metrics with
  // state override both; set_state throws ValueError for a vector of another length.
  virtual std::vector<double> state() const { return {}; }
  virtual void set_state(const std::vector<double>& values);

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  const std::string& dtype() const { return dtype_; }

  // Keras config: {"name", "dtype"} plus the metric's own options.
  virtual json get_config() const;

  // "Metric 'accuracy' (SparseCategoricalAccuracy)": the `where` of error messages.
  std::string where() const;

 private:
  std::string name_;
  std::string dtype_;
};
using MetricPtr = std::shared_ptr<Metric>;

// Reads the base keys of a config into `name`/`dtype` (missing keys keep the defaults; a
// DTypePolicy object gives its policy name).
void read_base_config(const json& config, std::string& name, std::string& dtype);

// ---- registry ----

using MetricFactory = std::function<MetricPtr(const json& config)>;

// Registers a metric class under `class_name` and snake_case `aliases` ("acc",
// "sparse_categorical_accuracy"). A second registration replaces the first.
void register_metric(const std::string& class_name, MetricFactory factory, const std::vector<std::string>& aliases = {});

// A fresh metric from a Keras identifier (class or function name), named `identifier` as
// compile() names it ("acc" logs as "acc"). Plain "accuracy"/"acc" give Accuracy (exact
// equality); use resolve_accuracy (accuracy.h) for compile's loss/shape-dependent choice.
// Unknown identifier -> ValueError listing the known names.
MetricPtr get(const std::string& identifier);

// The class name an identifier resolves to; empty if unknown.
std::string canonical_class_name(const std::string& identifier);

// From a config: a string identifier, or {"class_name", "config"} (Keras 2 or 3 form).
MetricPtr deserialize(const json& config);
// Keras 3 object form {"module": "keras.metrics", "class_name", "config", "registered_name": null}.
json serialize(const Metric& metric);

std::vector<std::string> registered_metrics();

}  // namespace keras::metrics
