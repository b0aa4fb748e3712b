// compile / fit / evaluate / predict and the per-batch steps (keras.Model's Trainer).
#include <algorithm>
#include <numeric>

#include "backend/autodiff.h"
#include "backend/ops.h"
#include "keras/progbar.h"
#include "keras/train_state.h"

namespace keras {

namespace {
std::string model_where(const Model& m) { return "Model '" + m.name() + "'"; }

void check_xy(const Model& m, const char* fn, const Tensor& x, const Tensor& y) {
  std::string where = model_where(m) + " " + fn;
  if (!x.defined() || x.rank() == 0) fail<ValueError>(where, "x with a batch axis", x.defined() ? "a scalar" : "no x");
  if (y.defined()) {
    if (y.rank() == 0) fail<ValueError>(where, "y with a batch axis", "a scalar");
    if (x.dim(0) != y.dim(0))
      fail<ValueError>(where, "x and y with the same number of samples",
                       std::to_string(x.dim(0)) + " and " + std::to_string(y.dim(0)));
  }
  if (x.dim(0) == 0) fail<ValueError>(where, "at least one sample", "an empty dataset");
}

void check_batch_size(const Model& m, const char* fn, int64_t batch_size) {
  if (batch_size < 1)
    fail<ValueError>(model_where(m) + " " + fn, "batch_size >= 1", std::to_string(batch_size));
}

// Rows `idx` of `t` (the batch gather of a shuffled epoch).
Tensor gather_rows(const Tensor& t, const Tensor& idx) { return ops::take(t, idx, 0); }

int64_t num_batches(int64_t n, int64_t batch_size) { return (n + batch_size - 1) / batch_size; }
}  // namespace

bool Model::compiled() const { return train_->compiled; }
optimizers::Optimizer* Model::optimizer() const { return train_->optimizer.get(); }
losses::Loss* Model::loss() const { return train_->loss.get(); }
const std::vector<std::shared_ptr<metrics::Metric>>& Model::metrics() const { return train_->metrics; }

void Model::compile(const CompileOptions& options) {
  auto& st = *train_;
  if (options.loss.empty())
    fail<ValueError>(model_where(*this) + " compile", "a loss", "none", "Pass .loss = \"mse\" or a loss object.");
  st.optimizer = options.optimizer.object ? options.optimizer.object : optimizers::get(options.optimizer.name);
  st.loss = options.loss.object ? options.loss.object : losses::get(options.loss.name);
  st.metric_args = options.metrics;
  st.metrics.clear();
  st.metrics_built = false;
  st.loss_tracker = std::make_shared<metrics::MeanImpl>(metrics::MeanOptions{.name = "loss"});
  st.compiled = true;
  stop_training = false;
}

void Model::build_metrics(const Tensor& y, const Tensor& y_pred) {
  auto& st = *train_;
  if (st.metrics_built) return;
  // Built aside and swapped in, so a bad metric name leaves no half-built list behind.
  std::vector<std::shared_ptr<metrics::Metric>> built;
  for (const auto& arg : st.metric_args) {
    if (arg.object) {
      built.push_back(arg.object);
    } else if (arg.name == "accuracy" || arg.name == "acc") {
      auto m = metrics::resolve_accuracy(st.loss->class_name(), y.shape(), y_pred.shape());
      m->set_name(arg.name);  // Keras logs it under the name the user gave
      built.push_back(m);
    } else {
      built.push_back(metrics::get(arg.name));
    }
  }
  st.metrics = std::move(built);
  st.metrics_built = true;
}

void Model::reset_metrics() {
  auto& st = *train_;
  if (st.loss_tracker) st.loss_tracker->reset_state();
  for (auto& m : st.metrics) m->reset_state();
}

Logs Model::collect_metrics(const std::string& prefix) const {
  Logs logs;
  const auto& st = *train_;
  logs.set(prefix + "loss", st.loss_tracker->result());
  for (const auto& m : st.metrics) logs.set(prefix + m->name(), m->result());
  return logs;
}

Logs Model::train_step(const Tensor& x, const Tensor& y) {
  auto& st = *train_;
  std::vector<Variable> vars = trainable_weights();
  TensorList sources;
  sources.reserve(vars.size());
  for (const auto& v : vars) sources.push_back(v.value());
  Tensor y_pred, loss;
  TensorList grads;
  {
    GradientTape tape;
    y_pred = (*this)(x, CallArgs{.training = true});
    loss = (*st.loss)(y, y_pred);
    for (const auto& r : regularization_losses()) loss = ops::add(loss, r);
    grads = tape.gradient(loss, sources);
  }
  st.optimizer->apply(grads, vars);
  NoGradGuard no_grad;
  build_metrics(y, y_pred);
  // Keras 3 weights the loss tracker by the batch size.
  st.loss_tracker->update_state(loss.detach(), Tensor::scalar(static_cast<double>(x.dim(0))));
  for (auto& m : st.metrics) m->update_state(y, y_pred.detach());
  return collect_metrics("");
}

void Model::test_step(const Tensor& x, const Tensor& y) {
  auto& st = *train_;
  NoGradGuard no_grad;
  Tensor y_pred = (*this)(x, CallArgs{.training = false});
  Tensor loss = (*st.loss)(y, y_pred);
  for (const auto& r : regularization_losses()) loss = ops::add(loss, r);
  build_metrics(y, y_pred);
  st.loss_tracker->update_state(loss, Tensor::scalar(static_cast<double>(x.dim(0))));
  for (auto& m : st.metrics) m->update_state(y, y_pred);
}

History Model::fit(const Tensor& x_all, const Tensor& y_all, const FitOptions& o) {
  if (!compiled())
    fail<StateError>(model_where(*this) + " fit", "a compiled model", "an uncompiled one", "Call compile() before fit().");
  check_batch_size(*this, "fit", o.batch_size);
  check_xy(*this, "fit", x_all, y_all);
  if (o.validation_split < 0 || o.validation_split >= 1)
    fail<ValueError>(model_where(*this) + " fit", "validation_split in [0, 1)", std::to_string(o.validation_split));
  if (o.epochs < 0) fail<ValueError>(model_where(*this) + " fit", "epochs >= 0", std::to_string(o.epochs));

  // Keras takes the validation split from the end, before shuffling.
  Tensor x = x_all, y = y_all;
  std::optional<ValidationData> val = o.validation_data;
  int64_t n = x_all.dim(0);
  if (o.validation_split > 0 && !val) {
    int64_t n_val = static_cast<int64_t>(static_cast<double>(n) * o.validation_split);
    if (n_val < 1 || n_val >= n)
      fail<ValueError>(model_where(*this) + " fit", "a validation_split leaving samples on both sides",
                       std::to_string(o.validation_split) + " of " + std::to_string(n) + " samples");
    x = x_all.slice_batch(0, n - n_val);
    y = y_all.slice_batch(0, n - n_val);
    val = ValidationData{x_all.slice_batch(n - n_val, n), y_all.slice_batch(n - n_val, n)};
    n -= n_val;
  }
  if (val) check_xy(*this, "fit (validation data)", val->x, val->y);

  auto history = std::make_shared<History>();
  CallbackList callbacks(o.callbacks);
  if (o.verbose) callbacks.add(std::make_shared<ProgbarLogger>(o.verbose));
  callbacks.add(history);
  int64_t steps = num_batches(n, o.batch_size);
  callbacks.set_model(this);
  callbacks.set_params({{"epochs", o.epochs}, {"steps", static_cast<double>(steps)}, {"verbose", o.verbose}});

  stop_training = false;
  Generator shuffle_gen(global_generator().next_seed());
  callbacks.on_train_begin({});
  Logs epoch_logs;
  for (int epoch = o.initial_epoch; epoch < o.epochs && !stop_training; ++epoch) {
    reset_metrics();
    callbacks.on_epoch_begin(epoch, {});
    // A permutation per epoch from the seeded stream: the same seed gives the same order.
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    if (o.shuffle) {
      uint32_t w[4];
      for (int64_t i = n - 1; i > 0; --i) {
        philox4x32(shuffle_gen.seed(), shuffle_gen.advance(1), w);
        uint64_t r = (static_cast<uint64_t>(w[0]) << 32) | w[1];
        std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(r % static_cast<uint64_t>(i + 1))]);
      }
    }
    Logs logs;
    for (int64_t b = 0; b < steps; ++b) {
      callbacks.on_train_batch_begin(static_cast<int>(b), {});
      int64_t lo = b * o.batch_size, hi = std::min(n, lo + o.batch_size);
      Tensor xb, yb;
      if (o.shuffle) {
        Tensor idx = Tensor::from_vector(std::vector<int64_t>(order.begin() + lo, order.begin() + hi));
        xb = gather_rows(x, idx);
        yb = gather_rows(y, idx);
      } else {
        xb = x.slice_batch(lo, hi);
        yb = y.slice_batch(lo, hi);
      }
      logs = train_step(xb, yb);
      callbacks.on_train_batch_end(static_cast<int>(b), logs);
      if (stop_training) break;
    }
    epoch_logs = collect_metrics("");
    if (val) {
      // Keras runs validation through evaluate with the fit callbacks: test hooks fire.
      Logs val_logs = run_test_loop(val->x, val->y, o.batch_size, callbacks, -1);
      for (const auto& [k, v] : val_logs.items()) epoch_logs.set("val_" + k, v);
    }
    callbacks.on_epoch_end(epoch, epoch_logs);
  }
  callbacks.on_train_end(epoch_logs);
  return *history;
}

Logs Model::run_test_loop(const Tensor& x, const Tensor& y, int64_t batch_size, CallbackList& callbacks, int verbose) {
  int64_t n = x.dim(0);
  int64_t steps = num_batches(n, batch_size);
  if (verbose >= 0) {  // verbose -1: inside fit, whose params (epochs, steps) stay in force
    callbacks.set_model(this);
    callbacks.set_params({{"steps", static_cast<double>(steps)}, {"verbose", verbose}});
  }
  reset_metrics();
  callbacks.on_test_begin({});
  Logs logs;
  for (int64_t b = 0; b < steps; ++b) {
    callbacks.on_test_batch_begin(static_cast<int>(b), {});
    int64_t lo = b * batch_size, hi = std::min(n, lo + batch_size);
    test_step(x.slice_batch(lo, hi), y.slice_batch(lo, hi));
    logs = collect_metrics("");
    callbacks.on_test_batch_end(static_cast<int>(b), logs);
  }
  logs = collect_metrics("");
  callbacks.on_test_end(logs);
  return logs;
}

Logs Model::evaluate(const Tensor& x, const Tensor& y, const EvaluateOptions& o) {
  if (!compiled())
    fail<StateError>(model_where(*this) + " evaluate", "a compiled model", "an uncompiled one",
                     "Call compile() before evaluate().");
  check_batch_size(*this, "evaluate", o.batch_size);
  check_xy(*this, "evaluate", x, y);
  CallbackList callbacks(o.callbacks);
  if (o.verbose) callbacks.add(std::make_shared<ProgbarLogger>(o.verbose));
  return run_test_loop(x, y, o.batch_size, callbacks, o.verbose);
}

Tensor Model::predict(const Tensor& x, const PredictOptions& o) {
  check_batch_size(*this, "predict", o.batch_size);
  check_xy(*this, "predict", x, Tensor());
  CallbackList callbacks(o.callbacks);
  if (o.verbose) callbacks.add(std::make_shared<ProgbarLogger>(o.verbose));
  int64_t n = x.dim(0), steps = num_batches(n, o.batch_size);
  callbacks.set_model(this);
  callbacks.set_params({{"steps", static_cast<double>(steps)}, {"verbose", o.verbose}});
  callbacks.on_predict_begin({});
  TensorList parts;
  for (int64_t b = 0; b < steps; ++b) {
    callbacks.on_predict_batch_begin(static_cast<int>(b), {});
    int64_t lo = b * o.batch_size, hi = std::min(n, lo + o.batch_size);
    parts.push_back(predict_on_batch(x.slice_batch(lo, hi)));
    callbacks.on_predict_batch_end(static_cast<int>(b), {});
  }
  callbacks.on_predict_end({});
  NoGradGuard no_grad;
  return parts.size() == 1 ? parts[0] : ops::concatenate(parts, 0);
}

Logs Model::train_on_batch(const Tensor& x, const Tensor& y) {
  if (!compiled())
    fail<StateError>(model_where(*this) + " train_on_batch", "a compiled model", "an uncompiled one",
                     "Call compile() first.");
  check_xy(*this, "train_on_batch", x, y);
  reset_metrics();
  return train_step(x, y);
}

Logs Model::test_on_batch(const Tensor& x, const Tensor& y) {
  if (!compiled())
    fail<StateError>(model_where(*this) + " test_on_batch", "a compiled model", "an uncompiled one",
                     "Call compile() first.");
  check_xy(*this, "test_on_batch", x, y);
  reset_metrics();
  test_step(x, y);
  return collect_metrics("");
}

Tensor Model::predict_on_batch(const Tensor& x) {
  NoGradGuard no_grad;
  return (*this)(x, CallArgs{.training = false});
}

}  // namespace keras
