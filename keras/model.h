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
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "keras/callback.h"
#include "layers/input_layer.h"
#include "layers/layer.h"

namespace keras {

namespace optimizers { class Optimizer; }
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

struct CompileOptions {
  NamedOr<optimizers::Optimizer> optimizer = "rmsprop";
  NamedOr<losses::Loss> loss;
  std::vector<NamedOr<metrics::Metric>> metrics;
};

struct ValidationData {
  Tensor x, y;
};

struct FitOptions {
  int64_t batch_size = 32;
  int epochs = 1;
  int verbose = 1;  // 0 silent, 1 progress bar, 2 one line per epoch
  std::vector<CallbackPtr> callbacks;
  double validation_split = 0.0;  // last fraction of x/y, taken before shuffling
  std::optional<ValidationData> validation_data;
  bool shuffle = true;
  int initial_epoch = 0;
};

struct EvaluateOptions {
  int64_t batch_size = 32;
  int verbose = 1;
  std::vector<CallbackPtr> callbacks;
};

struct PredictOptions {
  int64_t batch_size = 32;
  int verbose = 0;
  std::vector<CallbackPtr> callbacks;
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
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  std::vector<DType> compute_output_dtype(const std::vector<DType>& input_dtypes) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  void update_paths(const std::string& prefix) override;

  // ---- training (keras/trainer.cpp) ----
  void compile(const CompileOptions& options);
  bool compiled() const;
  // Trains on (x, y) for `epochs`; returns the History of per-epoch logs.
  // Throws StateError before compile, ValueError for mismatched x/y lengths, an empty dataset
  // or batch_size < 1; label errors come from the loss.
  History fit(const Tensor& x, const Tensor& y, const FitOptions& options = {});
  // Loss and metrics over (x, y), batched.
  Logs evaluate(const Tensor& x, const Tensor& y, const EvaluateOptions& options = {});
  // Outputs for x, batched, in inference mode.
  Tensor predict(const Tensor& x, const PredictOptions& options = {});
  Logs train_on_batch(const Tensor& x, const Tensor& y);
  Logs test_on_batch(const Tensor& x, const Tensor& y);
  Tensor predict_on_batch(const Tensor& x);
  optimizers::Optimizer* optimizer() const;
  losses::Loss* loss() const;
  const std::vector<std::shared_ptr<metrics::Metric>>& metrics() const;
  // Set by callbacks (EarlyStopping) to end fit after the current epoch.
  bool stop_training = false;

  // Prints the Keras summary table (layers, output shapes, parameter counts).
  void summary(std::ostream& os = std::cout) const;

 protected:
  explicit Model(const std::string& name);  // graph set later (Sequential)
  void set_graph(const std::vector<KerasTensor>& inputs, const std::vector<KerasTensor>& outputs);
  bool has_graph() const;
  // Hook for Sequential: build the graph from the first data seen.
  virtual void ensure_graph(const std::vector<Shape>& input_shapes);

 private:
  struct Graph;
  struct TrainState;
  std::unique_ptr<Graph> graph_;
  std::unique_ptr<TrainState> train_;
  Logs run_test_loop(const Tensor& x, const Tensor& y, int64_t batch_size, CallbackList& callbacks, int verbose);
  Logs train_step(const Tensor& x, const Tensor& y);
  void test_step(const Tensor& x, const Tensor& y);
  Logs collect_metrics(const std::string& prefix) const;
  void reset_metrics();
  void build_metrics(const Tensor& y, const Tensor& y_pred);
};

}  // namespace keras
