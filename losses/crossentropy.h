// Cross-entropy losses: BinaryCrossentropy, CategoricalCrossentropy,
// SparseCategoricalCrossentropy (keras.losses), with Keras 3 numerics:
//  - probabilities (from_logits=false) are clipped to [eps, 1 - eps], eps = 1e-7; categorical
//    ones are first renormalised to sum 1 along the class axis;
//  - logits use stable forms: softplus(x) - y*x for binary, log_softmax for categorical, and
//    the fused "sparse_softmax_cross_entropy" op for sparse labels.
// Factories named like the Keras classes return handles:
//   auto loss = keras::losses::SparseCategoricalCrossentropy({.from_logits = true});
#pragma once
#include "losses/loss.h"

namespace keras::losses {

// Keras's backend epsilon, the clipping margin for probabilities.
constexpr double kEpsilon = 1e-7;

// ---- functional forms (unreduced) ----
// `where` names the caller in error messages (ShapeError with both shapes, IndexError for
// labels out of range).

// Mean over `axis` of the elementwise binary cross-entropy; y_true smoothed towards 0.5 by
// label_smoothing (in [0, 1]). Shapes must match after Keras's squeeze/expand of a trailing 1.
Tensor binary_crossentropy(const Tensor& y_true, const Tensor& y_pred, bool from_logits = false,
                           double label_smoothing = 0.0, int axis = -1,
                           const std::string& where = "binary_crossentropy");
// -sum(y_true * log p) over `axis`; y_true one-hot (or a distribution) of y_pred's shape,
// smoothed as y*(1-ls) + ls/num_classes.
Tensor categorical_crossentropy(const Tensor& y_true, const Tensor& y_pred, bool from_logits = false,
                                double label_smoothing = 0.0, int axis = -1,
                                const std::string& where = "categorical_crossentropy");
// Classes on the last axis of y_pred (..., C); y_true integer labels (int32/int64, or floats
// holding integers) of shape y_pred.shape[:-1], optionally with a trailing 1. Returns shape
// y_pred.shape[:-1]. Labels outside [0, C) -> IndexError naming the label, its position and C;
// non-integral float labels -> ValueError.
Tensor sparse_categorical_crossentropy(const Tensor& y_true, const Tensor& y_pred, bool from_logits = false,
                                       const std::string& where = "sparse_categorical_crossentropy");

struct BinaryCrossentropyOptions {
  bool from_logits = false;
  double label_smoothing = 0.0;
  int axis = -1;
  std::string reduction = "sum_over_batch_size";
  std::string name = "binary_crossentropy";
};
class BinaryCrossentropyImpl : public Loss {
 public:
  explicit BinaryCrossentropyImpl(const BinaryCrossentropyOptions& options = {});
  std::string class_name() const override { return "BinaryCrossentropy"; }
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  json get_config() const override;  // + from_logits, label_smoothing, axis
  static std::shared_ptr<BinaryCrossentropyImpl> from_config(const json& config);
  const BinaryCrossentropyOptions& options() const { return options_; }

 private:
  BinaryCrossentropyOptions options_;
};
std::shared_ptr<BinaryCrossentropyImpl> BinaryCrossentropy(const BinaryCrossentropyOptions& options = {});

struct CategoricalCrossentropyOptions {
  bool from_logits = false;
  double label_smoothing = 0.0;
  int axis = -1;
  std::string reduction = "sum_over_batch_size";
  std::string name = "categorical_crossentropy";
};
class CategoricalCrossentropyImpl : public Loss {
 public:
  explicit CategoricalCrossentropyImpl(const CategoricalCrossentropyOptions& options = {});
  std::string class_name() const override { return "CategoricalCrossentropy"; }
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  json get_config() const override;  // + from_logits, label_smoothing, axis
  static std::shared_ptr<CategoricalCrossentropyImpl> from_config(const json& config);
  const CategoricalCrossentropyOptions& options() const { return options_; }

 private:
  CategoricalCrossentropyOptions options_;
};
std::shared_ptr<CategoricalCrossentropyImpl> CategoricalCrossentropy(const CategoricalCrossentropyOptions& options = {});

struct SparseCategoricalCrossentropyOptions {
  bool from_logits = false;
  std::string reduction = "sum_over_batch_size";
  std::string name = "sparse_categorical_crossentropy";
};
class SparseCategoricalCrossentropyImpl : public Loss {
 public:
  explicit SparseCategoricalCrossentropyImpl(const SparseCategoricalCrossentropyOptions& options = {});
  std::string class_name() const override { return "SparseCategoricalCrossentropy"; }
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  json get_config() const override;  // + from_logits, ignore_class (always null here)
  static std::shared_ptr<SparseCategoricalCrossentropyImpl> from_config(const json& config);
  const SparseCategoricalCrossentropyOptions& options() const { return options_; }

 private:
  SparseCategoricalCrossentropyOptions options_;
};
std::shared_ptr<SparseCategoricalCrossentropyImpl> SparseCategoricalCrossentropy(
    const SparseCategoricalCrossentropyOptions& options = {});

}  // namespace keras::losses
