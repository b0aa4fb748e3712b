// Loss: the base of every loss (keras.losses.Loss), its reductions, and the registry of losses
// by Keras name.
//
// A loss is used through a shared handle (LossPtr). `call` gives the unreduced losses (one per
// sample for the built-ins: the last axis is averaged or summed away, so (batch, d) inputs give
// (batch,)); `operator()` applies the sample weights and the reduction, as Keras 3's
// Loss.__call__ does. Everything runs through keras::ops, so gradients come from the tape.
//
// Reductions (Keras 3 names): "sum_over_batch_size" (default; sum / number of elements, sample
// weights do NOT change the divisor), "mean" (same), "sum", "mean_with_sample_weight"
// (sum / sum of weights, 0 when that is 0), "none" (no reduction; JSON null reads as "none").
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/tensor.h"

namespace keras::losses {

using json = nlohmann::json;

class Loss {
 public:
  // Throws ValueError for an unknown reduction, listing the allowed ones.
  Loss(std::string name, std::string reduction);
  virtual ~Loss() = default;

  // Keras class name ("SparseCategoricalCrossentropy"); also the registry key.
  virtual std::string class_name() const = 0;

  // Unreduced losses: shape y_pred.shape()[:-1] for the built-ins (after Keras's squeeze/expand
  // of a trailing 1 so that y_true and y_pred have one rank). The result has y_pred's floating
  // dtype (float32 for integer y_pred). Throws ShapeError naming the loss and both shapes.
  virtual Tensor call(const Tensor& y_true, const Tensor& y_pred) const = 0;

  // call(), then the sample weights (any shape that broadcasts against the losses after Keras's
  // squeeze/expand of a trailing 1; undefined = none), then the reduction. A scalar unless the
  // reduction is "none".
  Tensor operator()(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = {}) const;

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  const std::string& reduction() const { return reduction_; }

  // Keras config: {"name", "reduction"} plus the loss's own options.
  virtual json get_config() const;

  // "Loss 'categorical_crossentropy' (CategoricalCrossentropy)": the `where` of error messages.
  std::string where() const;

 private:
  std::string name_;
  std::string reduction_;
};
using LossPtr = std::shared_ptr<Loss>;

// ---- helpers shared by the built-ins (public for custom losses) ----

// Validates a reduction name; "" or "auto" (Keras 2) mean the default. Throws ValueError.
std::string standardize_reduction(const std::string& reduction);

// Keras's squeeze_or_expand_to_same_rank: when the ranks differ by one and the longer shape
// ends in 1, that axis is squeezed, or the rank-1 tensor gets a trailing 1 instead. Other
// combinations are returned unchanged.
std::pair<Tensor, Tensor> squeeze_or_expand_to_same_rank(const Tensor& a, const Tensor& b);

// Keras's apply_mask: folds a boolean `mask` (a prediction's Tensor::keras_mask; undefined = none)
// into `sample_weight` (may be undefined). For the mean reductions a real entry weighs
// total/valid, so the mean runs over the real entries only; otherwise the weight is 0 or 1.
Tensor apply_mask(const Tensor& sample_weight, const Tensor& mask, DType dtype, const std::string& reduction);

// Applies `sample_weight` (may be undefined) and `reduction` to unreduced `values`.
Tensor reduce_weighted_values(const Tensor& values, const Tensor& sample_weight, const std::string& reduction);

// The floating dtype computations run in for `y_pred` (float32 for integer/bool inputs).
DType compute_dtype(const Tensor& y_pred);
// `x` converted to `dtype` (recorded on the tape when x is; a plain copy otherwise), on `device`.
Tensor to_compute(const Tensor& x, DType dtype, Device device);
// Throws ShapeError "<where>: expected y_true and y_pred of one shape, got ..." unless equal.
void check_same_shape(const std::string& where, const Tensor& y_true, const Tensor& y_pred);

// Reads the base keys of a config into `reduction`/`name` (reduction null = "none"; a missing
// name keeps the default).
void read_base_config(const json& config, std::string& reduction, std::string& name);

// ---- registry ----

using LossFactory = std::function<LossPtr(const json& config)>;

// Registers a loss class under `class_name` and the snake_case `aliases` that name it
// ("mse", "mean_squared_error"). A second registration replaces the first.
void register_loss(const std::string& class_name, LossFactory factory, const std::vector<std::string>& aliases = {});

// A loss from a Keras identifier: class name ("MeanSquaredError", case-sensitive) or function
// name/alias ("mse", "mean_squared_error", "sparse_categorical_crossentropy"). Default options.
// Throws ValueError naming the identifier and listing the known names.
LossPtr get(const std::string& identifier);

// The class name an identifier resolves to ("mse" -> "MeanSquaredError"); empty if unknown.
std::string canonical_class_name(const std::string& identifier);

// From a config: a string identifier, or {"class_name", "config"} in Keras 2 or Keras 3
// form (module/registered_name ignored). Unknown class -> ValueError.
LossPtr deserialize(const json& config);
// Keras 3 object form: {"module": "keras.losses", "class_name", "config", "registered_name": null}.
json serialize(const Loss& loss);

std::vector<std::string> registered_losses();

}  // namespace keras::losses
