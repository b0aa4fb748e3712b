// MeanIoU (keras.metrics.MeanIoU): the mean over classes of intersection-over-union, from a
// confusion matrix accumulated over batches (Keras 3 semantics).
//
// y_true and y_pred are class ids (or, with sparse_y_true/sparse_y_pred false, scores whose
// argmax over `axis` gives the id); both are flattened, cast to integers by truncation, and
// weighted by the flattened sample_weight (broadcast; default 1). Elements whose label is
// ignore_class are dropped. Per class c: IoU = tp / (tp + fp + fn + eps) with eps = 1e-7; the
// result averages over the classes with a non-zero denominator (a class never seen and never
// predicted does not count), and is 0 before any update. direction "max".
#pragma once
#include <optional>

#include "metrics/metric.h"

namespace keras::metrics {

struct MeanIoUOptions {
  int num_classes = 2;                // >= 1
  std::optional<int> ignore_class;
  bool sparse_y_true = true;
  bool sparse_y_pred = true;
  int axis = -1;                      // class axis of non-sparse inputs
  std::string name = "mean_io_u";     // Keras 3's default name
  std::string dtype = "float32";
};

class MeanIoUImpl : public Metric {
 public:
  explicit MeanIoUImpl(const MeanIoUOptions& options = {});
  std::string class_name() const override { return "MeanIoU"; }

  // Labels outside [0, num_classes) with a non-zero weight are an IndexError naming the value;
  // label and prediction counts that differ after flattening are a ShapeError.
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = {}) override;
  double result() const override;
  void reset_state() override;
  std::string direction() const override { return "max"; }
  json get_config() const override;  // + num_classes, ignore_class, sparse_y_true, sparse_y_pred, axis
  // The confusion matrix, row = true class, column = predicted class, row-major.
  std::vector<double> state() const override { return matrix_; }
  void set_state(const std::vector<double>& values) override;

  // IoU per class (0 where the class has no element).
  std::vector<double> per_class() const;
  int num_classes() const { return options_.num_classes; }

  static std::shared_ptr<MeanIoUImpl> from_config(const json& config);

 private:
  MeanIoUOptions options_;
  std::vector<double> matrix_;
};
std::shared_ptr<MeanIoUImpl> MeanIoU(const MeanIoUOptions& options = {});

}  // namespace keras::metrics
