// BatchNormalization (keras.layers.BatchNormalization) over the last axis.
//
// Training (training && trainable, as Keras 3): normalizes with this batch's mean and biased
// variance and updates the moving statistics in place,
//   moving = moving * momentum + batch * (1 - momentum);
// they never receive gradients. Otherwise (inference, or a frozen layer even when called with
// training=true): normalizes with the moving statistics and leaves them untouched.
// Weights in Keras order: gamma (if scale), beta (if center), moving_mean, moving_variance,
// all (C,); the moving ones are non-trainable.
#pragma once
#include "layers/constraints.h"
#include "layers/initializers.h"
#include "layers/layer_handle.h"
#include "layers/regularizers.h"

namespace keras::layers {

struct BatchNormalizationOptions {
  int64_t axis = -1;  // only the last axis is supported (NotImplementedError otherwise)
  double momentum = 0.99;
  double epsilon = 1e-3;  // > 0
  bool center = true;
  bool scale = true;
  InitializerArg beta_initializer = "zeros";
  InitializerArg gamma_initializer = "ones";
  InitializerArg moving_mean_initializer = "zeros";
  InitializerArg moving_variance_initializer = "ones";
  RegularizerArg beta_regularizer;
  RegularizerArg gamma_regularizer;
  ConstraintArg beta_constraint;  // applied after each optimizer update
  ConstraintArg gamma_constraint;
  // Under a multi-process DataParallel, normalise with the statistics of the whole global batch
  // (SyncBatchNormalization); otherwise no effect.
  bool synchronized = false;
  // Batch renormalization (Keras's renorm, renorm_clipping {"rmax", "rmin", "dmax"} or null,
  // renorm_momentum): kept for the config; renorm = true is not implemented (NotImplementedError
  // at construction, so such a model is never trained as plain batch normalization).
  bool renorm = false;
  json renorm_clipping = nullptr;
  double renorm_momentum = 0.99;
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class BatchNormalizationImpl : public Layer {
 public:
  explicit BatchNormalizationImpl(BatchNormalizationOptions options);
  std::string class_name() const override { return "BatchNormalization"; }
  void build(const std::vector<Shape>& input_shapes) override;
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  bool supports_masking() const override { return true; }  // Keras: the mask passes through
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const BatchNormalizationOptions& options() const { return options_; }
  const Variable& gamma() const { return gamma_; }  // undefined without scale
  const Variable& beta() const { return beta_; }    // undefined without center
  const Variable& moving_mean() const { return moving_mean_; }
  const Variable& moving_variance() const { return moving_variance_; }

 private:
  BatchNormalizationOptions options_;
  Variable gamma_, beta_, moving_mean_, moving_variance_;
};
KERAS_LAYER_HANDLE(BatchNormalization, BatchNormalizationOptions);

// Reads a Keras 2 (axis may be a list of one) or Keras 3 config; unknown keys ignored.
BatchNormalizationOptions batch_normalization_options_from_config(const json& config);

}  // namespace keras::layers
