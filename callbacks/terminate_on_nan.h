// TerminateOnNaN (keras.callbacks.TerminateOnNaN): stops fit after a training batch whose loss
// is NaN or infinite, and names the first layer whose output was not finite.
//
// Finding the layer costs nothing while training goes well: no batch is copied and no output
// checked. Only once the loss is not finite does the callback re-run the model's graph node by
// node, in inference mode and without the tape, on the input of the last training batch, and
// report the first node whose output holds a NaN or an infinity while its inputs did not
// (nested models are searched inside: "outer/inner"). The input comes from `last_batch`
// (default: the trainer's Model::last_train_x() when the model offers it). Without an input the
// report names the first layer whose weights are not finite instead, if any.
// The re-run sees the weights after the failing step's update; when that update already made
// a weight non-finite, the report says so next to the layer.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "backend/op_registry.h"
#include "keras/models/callback.h"

namespace keras::callbacks {

struct TerminateOnNaNOptions {
  bool diagnose = true;  // false: only stop, as Keras
  // The last training batch's input(s); empty list = unknown. Defaults to the trainer's.
  std::function<TensorList(const Model&)> last_batch;
  bool print = true;  // print the report on stdout, as Keras prints its message
};

class TerminateOnNaNImpl : public Callback {
 public:
  explicit TerminateOnNaNImpl(TerminateOnNaNOptions options = {});
  void on_train_begin(const Logs& logs) override;
  void on_train_batch_end(int batch, const Logs& logs) override;

  bool terminated() const { return terminated_; }
  // Path of the first layer whose output (or, without an input, weights) was not finite; empty
  // when none was found or training did not fail.
  const std::string& culprit() const { return culprit_; }
  // The message printed at termination.
  const std::string& report() const { return report_; }

 private:
  TerminateOnNaNOptions options_;
  bool terminated_ = false;
  std::string culprit_, report_;
};

std::shared_ptr<TerminateOnNaNImpl> TerminateOnNaN(TerminateOnNaNOptions options = {});

// The path ("dense_1", "backbone/conv2d") of the first graph node of `model` whose output is
// not finite when the model runs on `inputs` (inference mode, no tape, nothing mutated);
// "<input>" when an input itself is not finite; "" when every output is finite. Throws what
// the layers throw for unfit inputs.
std::string first_non_finite_output(Model& model, const TensorList& inputs);
// The first layer (graph order, nested models searched) with a non-finite weight; "" if none.
// `bad_weight`, when given, receives that weight's path.
std::string first_non_finite_weights(const Model& model, std::string* bad_weight = nullptr);

}  // namespace keras::callbacks
