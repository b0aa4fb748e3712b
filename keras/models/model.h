// Model: a functional graph of layers (keras.Model / Functional), trainable with compile / fit /
// evaluate / predict. A Model is itself a Layer, so it nests inside other models.
//
//   auto inputs = keras::layers::Input({784});
//   auto x = keras::layers::Dense({.units = 64, .activation = "relu"})(inputs);
//   auto outputs = keras::layers::Dense({.units = 10})(x);
//   keras::Model model(inputs, outputs);
//
// The graph is recorded by calling layers on KerasTensors; the model runs its nodes in
// topological order (one execution path, shared by Sequential).
#pragma once
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "keras/models/callback.h"
#include "keras/data/dataset.h"
#include "layers/input_layer.h"
#include "layers/layer.h"

namespace keras {

class BatchSource;
struct BatchData;
namespace optimizers { class Optimizer; }
struct SaveOptions;
struct LoadWeightsOptions;
struct ExportOptions;
struct LoadReport;
namespace losses { class Loss; }
namespace metrics { class Metric; }

// A Keras argument given either by name ("adam") or as an object.
template <class T>
struct NamedOr {
  std::string name;
  std::shared_ptr<T> object;
  NamedOr() = default;
  NamedOr(const char* n) : name(n) {}
  NamedOr(std::string n) : name(std::move(n)) {}
  template <class U>
    requires std::is_convertible_v<std::shared_ptr<U>, std::shared_ptr<T>>
  NamedOr(std::shared_ptr<U> o) : object(std::move(o)) {}
  bool empty() const { return name.empty() && !object; }
};

// A model with several outputs takes either one `loss` for all of them or `losses` (one per
// output, in output order), optional `loss_weights`, and metrics for every output (`metrics`)
// or per output (`output_metrics`). Logs then read "loss", "<output layer>_loss",
// "<output layer>_<metric>" as in Keras. `weighted_metrics` also receive the sample weights.
struct CompileOptions {
  NamedOr<optimizers::Optimizer> optimizer = "rmsprop";
  NamedOr<losses::Loss> loss;
  std::vector<NamedOr<losses::Loss>> losses;
  std::vector<double> loss_weights;
  std::vector<NamedOr<metrics::Metric>> metrics;
  std::vector<std::vector<NamedOr<metrics::Metric>>> output_metrics;
  std::vector<NamedOr<metrics::Metric>> weighted_metrics;
};

// Several inputs or outputs are given as lists, in the order of Model(inputs, outputs).
struct ValidationData {
  TensorList x, y;
  Tensor sample_weight;
  ValidationData() = default;
  ValidationData(Tensor x_, Tensor y_, Tensor w = {}) : x{std::move(x_)}, y{std::move(y_)}, sample_weight(std::move(w)) {}
  ValidationData(TensorList x_, TensorList y_, Tensor w = {}) : x(std::move(x_)), y(std::move(y_)), sample_weight(std::move(w)) {}
};

struct FitOptions {
  int64_t batch_size = 32;
  int epochs = 1;
  int verbose = 1;  // 0 silent, 1 progress bar, 2 one line per epoch
  std::vector<CallbackPtr> callbacks;
  double validation_split = 0.0;  // last fraction of x/y, taken before shuffling
  // Validation set (either kind, with tensor or Dataset training data; both: ValueError). It
  // replaces validation_split, as Keras's validation_data does.
  std::optional<ValidationData> validation_data;
  bool shuffle = true;
  int initial_epoch = 0;
  Tensor sample_weight;                       // (samples,): weights each sample's loss
  std::map<int64_t, double> class_weight;     // class index -> weight (not with sample_weight)
  // Batches per epoch (-1: one full pass). Tensor input: the first steps_per_epoch batches of
  // each epoch's order (all of them when there are fewer).
  int64_t steps_per_epoch = -1;
  // Validation batches, one full pass per epoch (an infinite Dataset is a ValueError unless
  // validation_steps is given).
  std::optional<data::Dataset> validation_dataset;
  // Validation batches per epoch (-1: one full pass). Each epoch's validation starts a fresh pass
  // of the validation set (Keras 3) and takes its first validation_steps batches, fewer when the
  // data ends first (a warning on stderr). Applies to validation_data and the split too.
  int64_t validation_steps = -1;
};

struct EvaluateOptions {
  int64_t batch_size = 32;
  int verbose = 1;
  std::vector<CallbackPtr> callbacks;
  Tensor sample_weight;
  // Batches to evaluate (-1: all). Required for an infinite Dataset; fewer when the data ends
  // first (a warning on stderr); with tensors, the first `steps` batches of batch_size.
  int64_t steps = -1;
};

struct PredictOptions {
  int64_t batch_size = 32;
  int verbose = 0;
  std::vector<CallbackPtr> callbacks;
  // Batches to predict (-1: all), as EvaluateOptions::steps: the output has their rows only.
  int64_t steps = -1;
};

class Model : public Layer {
 public:
  // Throws ValueError when an output does not depend on the inputs, or an input is not an
  // Input() tensor.
  Model(const std::vector<KerasTensor>& inputs, const std::vector<KerasTensor>& outputs, const std::string& name = "");
  Model(const KerasTensor& input, const KerasTensor& output, const std::string& name = "");
  ~Model() override;

  std::string class_name() const override { return "Functional"; }

  // ---- graph ----
  // The model's layers in graph order (Functional: InputLayers included, as Keras).
  virtual std::vector<LayerPtr> layers() const;
  // By name (ValueError listing the names) or position (IndexError).
  LayerPtr get_layer(const std::string& name) const;
  LayerPtr get_layer(int index) const;
  std::vector<LayerPtr> sublayers() const override;
  const std::vector<KerasTensor>& inputs() const;
  const std::vector<KerasTensor>& outputs() const;
  // The model's only input / output tensor (Keras's model.input / model.output); ValueError when
  // it has several (use inputs() / outputs()) or no graph.
  KerasTensor input() override;
  KerasTensor output() override;
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  std::vector<DType> compute_output_dtype(const std::vector<DType>& input_dtypes) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  void update_paths(const std::string& prefix) override;

  // ---- placement (keras/models/placement.cpp) ----
  // Moves every variable (weights, non-trainable state such as moving statistics, and the
  // optimizer's slots once they exist) to `device` in place, so existing Variable handles stay
  // valid; weights built later go there too. fit/evaluate/predict and the *_on_batch calls then
  // move each batch there. DeviceError when this build cannot reach `device`.
  // Nested models follow (weights they build later go there too).
  void to(Device device);
  // Where the model runs: the device given to to(); else that of its first weight; else
  // default_device() (a model without weights).
  Device device() const;

  // ---- training (keras/models/trainer.cpp) ----
  void compile(const CompileOptions& options);
  bool compiled() const;
  // Trains on (x, y) for `epochs`; returns the History of per-epoch logs.
  // Throws StateError before compile, ValueError for mismatched x/y lengths, an empty dataset
  // or batch_size < 1; label errors come from the loss.
  History fit(const Tensor& x, const Tensor& y, const FitOptions& options = {});
  History fit(const TensorList& x, const TensorList& y, const FitOptions& options = {});
  // From a pipeline of batches (x, y[, sample_weight]); its threads end when fit returns or throws.
  History fit(const data::Dataset& dataset, const FitOptions& options = {});
  // Loss and metrics over (x, y), batched.
  Logs evaluate(const Tensor& x, const Tensor& y, const EvaluateOptions& options = {});
  Logs evaluate(const TensorList& x, const TensorList& y, const EvaluateOptions& options = {});
  Logs evaluate(const data::Dataset& dataset, const EvaluateOptions& options = {});
  // Outputs for x, batched, in inference mode (one tensor per model output).
  Tensor predict(const Tensor& x, const PredictOptions& options = {});
  TensorList predict(const TensorList& x, const PredictOptions& options = {});
  Tensor predict(const data::Dataset& dataset, const PredictOptions& options = {});
  Logs train_on_batch(const Tensor& x, const Tensor& y);
  Logs train_on_batch(const TensorList& x, const TensorList& y, const Tensor& sample_weight = {});
  Logs test_on_batch(const Tensor& x, const Tensor& y);
  Logs test_on_batch(const TensorList& x, const TensorList& y, const Tensor& sample_weight = {});
  Tensor predict_on_batch(const Tensor& x);
  TensorList predict_on_batch(const TensorList& x);
  // The arguments compile() was given (StateError before compile).
  const CompileOptions& compile_options() const;
  optimizers::Optimizer* optimizer() const;
  // The loss of output 0 (all outputs when one loss was given).
  losses::Loss* loss() const;
  // Every compiled metric, over all outputs.
  std::vector<std::shared_ptr<metrics::Metric>> metrics() const;
  // Set by callbacks (EarlyStopping) to end fit after the current batch.
  bool stop_training = false;
  // Set by a callback in on_train_begin (BackupAndRestore) to resume fit at that epoch.
  std::optional<int> resume_epoch;
  // The inputs of the last training batch (no copy), for diagnosis (TerminateOnNaN).
  const TensorList& last_train_x() const;

  // Prints the Keras summary table (layers, output shapes, parameter counts).
  void summary(std::ostream& os = std::cout) const;

  // ---- saving (keras/saving/saving.h has the contracts; include it or keras/keras.h to use these) ----
  // save_model(*this, path[, options]): ".keras" or ".h5".
  void save(const std::string& path) const;
  void save(const std::string& path, const SaveOptions& options) const;
  // save_weights(*this, path): ".weights.h5" or a legacy ".h5".
  void save_weights(const std::string& path) const;
  // load_weights(*this, path[, options]); all-or-nothing, returns what was loaded/skipped/missing.
  LoadReport load_weights(const std::string& path);
  LoadReport load_weights(const std::string& path, const LoadWeightsOptions& options);
  // The Keras 3 JSON config (to_json(*this)).
  std::string to_json() const;
  // ---- export (keras/export/export.h has the contract; include it or keras/keras.h) ----
  // Keras's model.export(path, format="onnx"): export_model(*this, path[, options]). (`export`
  // itself is a C++ keyword.)
  void export_model(const std::string& path) const;
  void export_model(const std::string& path, const ExportOptions& options) const;

 protected:
  // For Sequential (graph set later) and subclassed models (a user class overriding call()).
  explicit Model(const std::string& name);
  // Subclassed models register their sublayers so that weights, trainability and paths follow
  // the model; an unnamed layer is named uniquely within it. Returns the handle.
  template <class Handle>
  Handle track(Handle layer) {
    track_layer(LayerPtr(layer));
    return layer;
  }
  void track_layer(const LayerPtr& layer);
  void set_graph(const std::vector<KerasTensor>& inputs, const std::vector<KerasTensor>& outputs);
  bool has_graph() const;
  // Hook for Sequential: build the graph from the first data seen (no-op otherwise).
  virtual void ensure_graph(const std::vector<Shape>& input_shapes) {}

 private:
  struct Graph;
  struct TrainState;
  std::unique_ptr<Graph> graph_;
  std::unique_ptr<TrainState> train_;
  std::vector<LayerPtr> tracked_;  // subclassed models' sublayers
  std::optional<Device> placement_;  // set by to()
  History fit_loop(BatchSource& train, BatchSource* validation, const FitOptions& options);
  History fit_epochs(BatchSource& train, BatchSource* validation, const FitOptions& options);
  Logs run_test_loop(BatchSource& batches, CallbackList& callbacks, int verbose);
  TensorList run_predict_loop(BatchSource& batches, const PredictOptions& options);
  // The one place a batch crosses to the model's device (placement.cpp). CPU tensors move;
  // a tensor on another accelerator is a DeviceError naming both devices. `fn` names the caller.
  BatchData place_batch(BatchData batch, const char* fn) const;
  Logs train_step(const TensorList& x, const TensorList& y, const Tensor& sample_weight);
  void test_step(const TensorList& x, const TensorList& y, const Tensor& sample_weight);
  Tensor compute_loss(const TensorList& y, const TensorList& y_pred, const Tensor& sample_weight, bool track);
  void update_metrics(const TensorList& y, const TensorList& y_pred, const Tensor& sample_weight);
  Logs collect_metrics() const;
  void reset_metrics();
  void build_metrics(const TensorList& y, const TensorList& y_pred);
};

// Moves `v`'s value to `device` in place: the value's TensorImpl gets a storage on `device`
// holding the same data, so every Tensor and Variable handle sharing it (optimizer maps, caches
// keyed by storage identity and version) sees the move. A no-op when it is there already.
// DeviceError when this build has no copy routine to `device`. Not safe against ops reading `v`
// on another thread at the same time.
void move_variable_to(const Variable& v, Device device);

}  // namespace keras
