// Normalization (keras.layers.Normalization): shifts and scales inputs by a mean and variance kept
// per index of the `axis` axes, given in the config or learned by adapt().
//
//   y = (x - mean) / max(sqrt(variance), 1e-7)        (invert: y = mean + x * max(sqrt(variance), 1e-7))
//
// computed in the layer's dtype (inputs are cast to it), 1e-7 being Keras's backend.epsilon().
// Gradients reach x; mean and variance are never trained.
//
// Weights, as both Keras 3 and tf_keras create them: without a given mean/variance the layer
// owns three non-trainable weights, in this order, `mean` and `variance` (float32, the extents of
// the kept axes, initialised to 0 and 1) and `count` (int64 scalar, 0; kept for old files and
// never changed by adapt(), as in Keras 3). They are saved and loaded like any weight
// (.weights.h5 vars/0..2; legacy .h5 "<layer>/mean:0", "variance:0", "count:0"). With a given
// mean/variance the layer has no weights: the values live in the config.
#pragma once
#include <functional>
#include <initializer_list>
#include <optional>
#include <vector>

#include "layers/layer_handle.h"

namespace keras::layers {

// A mean or variance as a Keras config holds it: None (the default), a number, or a (nested)
// list of numbers: `.mean = 3.0`, `.mean = {0.485, 0.456, 0.406}`, `NormalizationValue(v, {2, 3})`.
struct NormalizationValue {
  NormalizationValue() = default;  // None
  NormalizationValue(double v) : given(true), values{v} {}  // NOLINT: a number reads as in Keras
  NormalizationValue(std::initializer_list<double> v)
      : given(true), shape{static_cast<int64_t>(v.size())}, values(v) {}
  NormalizationValue(std::vector<double> v, Shape s) : given(true), shape(std::move(s)), values(std::move(v)) {}
  bool operator==(const NormalizationValue&) const = default;

  bool given = false;          // false: None
  Shape shape;                 // {} for a number
  std::vector<double> values;  // row-major, shape_numel(shape) of them
};

struct NormalizationOptions {
  // The axes that keep their own mean and variance (negative counts from the end); empty is
  // Keras's axis=None: one scalar mean and variance for everything. Kept axes need a known extent.
  std::vector<int64_t> axis = {-1};
  // Given together or not at all; same shape, of rank <= axis.size(). They are broadcast onto the
  // kept extents as Keras does: a number everywhere, a list aligned to the last kept axes.
  NormalizationValue mean;
  NormalizationValue variance;
  bool invert = false;  // apply the inverse: turn normalized values back into data
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class NormalizationImpl : public Layer {
 public:
  // ValueError (as Keras's constructor): mean without variance or the reverse, shapes that
  // differ, a mean of higher rank than axis.size(), a value count that does not fit its shape.
  explicit NormalizationImpl(NormalizationOptions options);
  std::string class_name() const override { return "Normalization"; }
  // Creates the weights (adapt case) or the broadcast constants (given mean/variance; ValueError
  // when they do not broadcast onto the kept extents).
  void build(const std::vector<Shape>& input_shapes) override;
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  bool supports_masking() const override { return true; }  // Keras: the mask passes through
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  std::vector<DType> compute_output_dtype(const std::vector<DType>& input_dtypes) override;
  // ShapeError: not one input, an axis outside [-rank, rank), a repeated axis, a kept axis of
  // unknown extent, or (once built) another rank or other kept extents than at build.
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  // axis (a list), invert, mean and variance (null unless given): the keys Keras writes.
  json get_config() const override;
  const NormalizationOptions& options() const { return options_; }

  // Learns mean and variance from `data`, one array whose first axis is the batch (Keras's
  // adapt(np.ndarray)): the mean and biased variance over every axis not kept. Builds the layer
  // for data's shape if needed. StateError for a layer given mean/variance in its options;
  // ShapeError when data does not fit the layer (see validate_input). Integer data is cast.
  void adapt(const Tensor& data);
  // The same over batches (Keras's adapt(iterable of batches)): `next_batch` returns each batch,
  // then nullopt. Batches are combined exactly as Keras does (lack-of-fit sum of squares), so the
  // result is the statistics of all batches together. ValueError for no batch at all.
  void adapt_batches(const std::function<std::optional<Tensor>()>& next_batch);

 private:
  std::vector<int> kept_axes(int64_t rank) const;  // sorted, non-negative
  Shape broadcast_shape() const;                    // kept extents, 1 elsewhere
  NormalizationOptions options_;
  Shape kept_extents_;  // input extents of the kept axes at build (by axis; -1 elsewhere)
  Variable mean_, variance_, count_;
  Tensor given_mean_, given_variance_;  // broadcast constants when mean/variance are given
};
KERAS_LAYER_HANDLE(Normalization, NormalizationOptions);

// Reads a Keras 3 or tf_keras Normalization config (unknown keys ignored): axis as an int, a
// list or null (None), mean/variance as null, a number or a nested list.
NormalizationOptions normalization_options_from_config(const json& config);

}  // namespace keras::layers
