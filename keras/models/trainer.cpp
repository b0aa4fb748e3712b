// fit / evaluate / predict and the per-batch steps (keras.Model's Trainer); compile() and the
// losses and metrics it sets up are in compile.cpp.
// Everything works on lists: one tensor per model input (x) and per model output (y).
#include <algorithm>
#include <cstdio>
#include <cmath>
#include <memory>
#include <numeric>

#include "backend/autodiff.h"
#include "backend/device_scope.h"
#include "backend/instrumentation.h"
#include "backend/ops.h"
#include "keras/models/batch_source.h"
#include "keras/models/progbar.h"
#include "keras/models/train_state.h"
#include "keras/profiler/profiler.h"

namespace keras {

namespace {
std::string model_where(const Model& m) { return "Model '" + m.name() + "'"; }

// Checks lengths and counts; returns the number of samples.
int64_t check_data(const Model& m, const char* fn, const TensorList& x, const TensorList& y, const Tensor& sw) {
  std::string where = model_where(m) + " " + fn;
  if (x.empty()) fail<ValueError>(where, "x", "nothing");
  int64_t n = -1;
  auto check = [&](const Tensor& t, const std::string& what) {
    if (!t.defined() || t.rank() == 0)
      fail<ValueError>(where, what + " with a batch axis", t.defined() ? "a scalar" : "no tensor");
    if (n < 0) n = t.dim(0);
    else if (t.dim(0) != n)
      fail<ValueError>(where, "x and y with the same number of samples",
                       std::to_string(n) + " and " + std::to_string(t.dim(0)) + " (" + what + ")");
  };
  for (size_t i = 0; i < x.size(); ++i) check(x[i], "x[" + std::to_string(i) + "]");
  for (size_t i = 0; i < y.size(); ++i) check(y[i], "y[" + std::to_string(i) + "]");
  if (sw.defined()) check(sw, "sample_weight");
  if (n == 0) fail<ValueError>(where, "at least one sample", "an empty dataset");
  return n;
}

// The next batch, the wait for it shown in a running profile.
std::optional<BatchData> next_batch(BatchSource& batches) {
  profiler::Span wait(profiler::EventKind::data_wait, "data_wait");
  return batches.next();
}

void check_batch_size(const Model& m, const char* fn, int64_t batch_size) {
  if (batch_size < 1) fail<ValueError>(model_where(m) + " " + fn, "batch_size >= 1", std::to_string(batch_size));
}

TensorList rows(const TensorList& ts, int64_t lo, int64_t hi) {
  TensorList out;
  for (const auto& t : ts) out.push_back(t.slice_batch(lo, hi));
  return out;
}

Tensor optional_rows(const Tensor& t, int64_t lo, int64_t hi) { return t.defined() ? t.slice_batch(lo, hi) : Tensor(); }

// Per-sample weights from class_weight (class of each sample: an integer label, or the argmax of
// a one-hot row), multiplied into `sample_weight`.
Tensor apply_class_weight(const Model& m, const TensorList& y, const Tensor& sample_weight,
                          const std::map<int64_t, double>& class_weight) {
  if (class_weight.empty()) return sample_weight;
  std::string where = model_where(m) + " fit";
  if (sample_weight.defined())
    fail<ValueError>(where, "either class_weight or sample_weight", "both", "Fold the class weights into sample_weight.");
  if (y.size() != 1) fail<ValueError>(where, "class_weight with a single-output model", std::to_string(y.size()) + " outputs");
  NoGradGuard no_grad;
  // The class of a sample: argmax of a one-hot row, else the rounded label (Keras); classes
  // missing from the map weigh 1.
  Tensor labels = y[0];
  if (labels.rank() >= 2 && labels.dim(-1) > 1) labels = ops::argmax(labels, -1);
  std::vector<double> cls = labels.astype(DType::float64).to_vector<double>();
  std::vector<float> w(cls.size());
  for (size_t i = 0; i < cls.size(); ++i) {
    auto it = class_weight.find(static_cast<int64_t>(std::llround(cls[i])));
    w[i] = it == class_weight.end() ? 1.0f : static_cast<float>(it->second);
  }
  return Tensor::from_vector(w, Shape{static_cast<int64_t>(w.size())}, y[0].device());  // beside the labels
}

// -1 is the "all batches" default; 0 or below -1 is a slip, not a request for no batches.
void check_steps(const Model& m, const char* fn, const std::string& option, int64_t steps) {
  if (steps == 0 || steps < -1)
    fail<ValueError>(model_where(m) + " " + fn, option + " >= 1 or -1 (all batches)", std::to_string(steps));
}

// Keras warns and goes on with the batches it got when the data ends before `steps`.
void warn_if_ran_out(const Model& m, const BatchSource& batches, const char* fn, int steps_done) {
  if (batches.ran_out())
    std::fprintf(stderr, "%s %s: your input ran out of data after %d steps.\n", model_where(m).c_str(), fn, steps_done);
}

// Evaluate and predict walk one fresh pass of at most `steps` batches.
DatasetBatches one_pass(const Model& m, const data::Dataset& dataset, int64_t steps, const char* fn) {
  check_steps(m, fn, "steps", steps);
  return DatasetBatches(dataset, steps, model_where(m) + " " + fn, {.name = "steps", .fresh_pass = true});
}

// Which of two validation sets should win is a guess, so fit takes one or neither.
void check_one_validation_set(const Model& m, const FitOptions& o) {
  if (o.validation_data && o.validation_dataset)
    fail<ValueError>(model_where(m) + " fit", "validation_data or validation_dataset", "both",
                     "Pass one validation set.");
}

// The batches fit validates on: `tensors` (validation_data or the split) or validation_dataset;
// null for none. Either kind serves either kind of training data.
std::unique_ptr<BatchSource> validation_batches(const Model& m, const std::optional<ValidationData>& tensors,
                                                const FitOptions& o) {
  check_steps(m, "fit", "validation_steps", o.validation_steps);
  if (tensors) {
    check_batch_size(m, "fit", o.batch_size);
    check_data(m, "fit (validation data)", tensors->x, tensors->y, tensors->sample_weight);
    return std::make_unique<TensorBatches>(tensors->x, tensors->y, tensors->sample_weight, o.batch_size, false, 0,
                                           o.validation_steps);
  }
  if (o.validation_dataset)
    return std::make_unique<DatasetBatches>(*o.validation_dataset, o.validation_steps,
                                            model_where(m) + " fit (validation)",
                                            data::StepsOption{.name = "validation_steps", .fresh_pass = true});
  return nullptr;
}
}  // namespace

Logs Model::train_step(const TensorList& x_global, const TensorList& y_global, const Tensor& sw_global) {
  auto& st = *train_;
  DataParallelRun* parallel = st.parallel.get();
  BatchData batch = place_batch({x_global, y_global, sw_global}, "train step");
  DeviceScope on_device(device());  // constants made by layers, losses and metrics land there too
  double weight = 1;  // this process's share of the global batch
  if (parallel) {
    auto shard = parallel->shard(batch);
    if (!shard) return collect_metrics();
    batch = std::move(shard->batch);
    weight = shard->weight;
  }
  const TensorList& x = batch.x;
  const TensorList& y = batch.y;
  const Tensor& sw = batch.sample_weight;
  std::vector<Variable> vars = trainable_weights();
  TensorList sources;
  sources.reserve(vars.size());
  for (const auto& v : vars) sources.push_back(v.value());
  TensorList y_pred, grads;
  st.last_train_x = x;
  using profiler::EventKind;
  {
    GradientTape tape;
    {
      profiler::Span span(EventKind::phase, "forward");
      y_pred = (*this)(x, CallArgs{.training = true});
    }
    Tensor loss;
    {
      profiler::Span span(EventKind::phase, "loss");
      loss = compute_loss(y, y_pred, sw, true);
      loss = st.optimizer->scale_loss(loss);  // Keras 3: loss_scale_factor, dynamic loss scaling
    }
    profiler::Span span(EventKind::phase, "backward");
    if (parallel) {
      // The global loss is the row-weighted sum of the processes' losses. Weighting the loss (not
      // the gradients) keeps the gradients that cross processes (synchronised statistics) exact.
      distribution::GradientReducer& reducer = parallel->reducer(vars);
      reducer.begin_step(1.0);
      Tensor share = ops::multiply(loss, weight);
      grads = reducer.finish(tape.gradient(share, sources, reducer.ready_fn()));
    } else {
      grads = tape.gradient(loss, sources);
    }
  }
  {
    profiler::Span span(EventKind::phase, "optimizer");
    st.optimizer->apply(grads, vars);
  }
  profiler::Span span(EventKind::phase, "metrics");
  update_metrics(y, y_pred, sw);
  return collect_metrics();
}

void Model::test_step(const TensorList& x_global, const TensorList& y_global, const Tensor& sw_global) {
  NoGradGuard no_grad;
  BatchData placed = place_batch({x_global, y_global, sw_global}, "test step");
  DeviceScope on_device(device());
  TensorList x = std::move(placed.x), y = std::move(placed.y);
  Tensor sw = placed.sample_weight;
  if (DataParallelRun* parallel = train_->parallel.get()) {
    // Evaluation has no collectives inside a step, so a process may take no rows.
    auto [lo, hi] = distribution::shard_range(x[0].dim(0), parallel->rank(), parallel->comm().size());
    if (lo == hi) return;
    x = rows(x, lo, hi);
    y = rows(y, lo, hi);
    sw = optional_rows(sw, lo, hi);
  }
  TensorList y_pred = (*this)(x, CallArgs{.training = false});
  compute_loss(y, y_pred, sw, true);
  update_metrics(y, y_pred, sw);
}

History Model::fit(const Tensor& x, const Tensor& y, const FitOptions& o) { return fit(TensorList{x}, TensorList{y}, o); }

History Model::fit(const TensorList& x_all, const TensorList& y_all, const FitOptions& o) {
  const std::string where = model_where(*this) + " fit";
  if (!compiled()) fail<StateError>(where, "a compiled model", "an uncompiled one", "Call compile() before fit().");
  check_batch_size(*this, "fit", o.batch_size);
  check_one_validation_set(*this, o);
  int64_t n = check_data(*this, "fit", x_all, y_all, o.sample_weight);
  if (o.validation_split < 0 || o.validation_split >= 1)
    fail<ValueError>(where, "validation_split in [0, 1)", std::to_string(o.validation_split));
  Tensor sw_all = apply_class_weight(*this, y_all, o.sample_weight, o.class_weight);

  // Keras takes the validation split from the end, before shuffling.
  TensorList x = x_all, y = y_all;
  Tensor sw = sw_all;
  std::optional<ValidationData> val = o.validation_data;
  if (o.validation_split > 0 && !val && !o.validation_dataset) {
    int64_t n_val = static_cast<int64_t>(static_cast<double>(n) * o.validation_split);
    if (n_val < 1 || n_val >= n)
      fail<ValueError>(where, "a validation_split leaving samples on both sides",
                       std::to_string(o.validation_split) + " of " + std::to_string(n) + " samples");
    x = rows(x_all, 0, n - n_val);
    y = rows(y_all, 0, n - n_val);
    sw = optional_rows(sw_all, 0, n - n_val);
    val = ValidationData(rows(x_all, n - n_val, n), rows(y_all, n - n_val, n), optional_rows(sw_all, n - n_val, n));
  }
  check_steps(*this, "fit", "steps_per_epoch", o.steps_per_epoch);
  auto validation = validation_batches(*this, val, o);
  // One shuffle seed per fit, drawn from the global generator: set_random_seed reproduces it.
  // Under data parallelism every process walks process 0's order.
  TensorBatches train(x, y, sw, o.batch_size, o.shuffle, DataParallelRun::agree_seed(global_generator().next_seed()),
                      o.steps_per_epoch);
  return fit_loop(train, validation.get(), o);
}

History Model::fit(const data::Dataset& dataset, const FitOptions& o) {
  const std::string where = model_where(*this) + " fit";
  if (!compiled()) fail<StateError>(where, "a compiled model", "an uncompiled one", "Call compile() before fit().");
  if (o.validation_split > 0)
    fail<ValueError>(where, "no validation_split with a Dataset", std::to_string(o.validation_split),
                     "Split the Dataset with take()/skip() and pass validation_dataset.");
  if (o.sample_weight.defined() || !o.class_weight.empty())
    fail<ValueError>(where, "sample weights inside the Dataset's elements", "sample_weight/class_weight options",
                     "Yield (x, y, sample_weight) elements.");
  check_one_validation_set(*this, o);
  check_steps(*this, "fit", "steps_per_epoch", o.steps_per_epoch);
  // The iterators own the pipeline threads: locals here, so they are joined on return or throw.
  DatasetBatches train(dataset, o.steps_per_epoch, where);
  auto validation = validation_batches(*this, o.validation_data, o);
  return fit_loop(train, validation.get(), o);
}

History Model::fit_loop(BatchSource& train, BatchSource* validation, const FitOptions& o) {
  instrumentation::StepScope step_scope;  // the loop's steps end with it
  if (o.epochs < 0) fail<ValueError>(model_where(*this) + " fit", "epochs >= 0", std::to_string(o.epochs));
  ParallelScope parallel(*this, train_->parallel, model_where(*this) + " fit");
  if (!parallel.run) return fit_epochs(train, validation, o);
  try {
    return fit_epochs(train, validation, o);
  } catch (const std::exception& e) {
    parallel.run->abort_job("fit", e);
  }
}

History Model::fit_epochs(BatchSource& train, BatchSource* validation, const FitOptions& o) {
  auto history = std::make_shared<History>();
  CallbackList callbacks(o.callbacks);
  if (o.verbose) callbacks.add(std::make_shared<ProgbarLogger>(o.verbose));
  if (train_->parallel && train_->parallel->rank() != 0) callbacks.drop_chief_only();
  callbacks.add(history);
  callbacks.set_model(this);
  callbacks.set_params({{"epochs", o.epochs}, {"steps", static_cast<double>(train.steps())}, {"verbose", o.verbose}});

  stop_training = false;
  resume_epoch.reset();
  callbacks.on_train_begin({});
  const int first_epoch = resume_epoch.value_or(o.initial_epoch);
  resume_epoch.reset();
  Logs epoch_logs;
  for (int epoch = first_epoch; epoch < o.epochs && !stop_training; ++epoch) {
    reset_metrics();
    callbacks.on_epoch_begin(epoch, {});
    train.begin_epoch(epoch);
    int step = 0;
    while (!stop_training) {
      auto batch = next_batch(train);
      if (!batch) break;
      if (instrumentation::active()) instrumentation::set_step({"train", epoch, step});
      profiler::StepSpan step_span("train", epoch, step);
      callbacks.on_train_batch_begin(step, {});
      Logs logs = train_step(batch->x, batch->y, batch->sample_weight);
      callbacks.on_train_batch_end(step++, logs);
    }
    if (train.ran_out()) {
      std::fprintf(stderr, "%s fit: your input ran out of data; interrupting training.\n", model_where(*this).c_str());
      stop_training = true;
    }
    if (train_->parallel) train_->parallel->average_non_trainable(*this);
    epoch_logs = collect_metrics();
    if (validation) {
      // Keras runs validation through evaluate with the fit callbacks: test hooks fire.
      Logs val_logs = run_test_loop(*validation, callbacks, -1);
      for (const auto& [k, v] : val_logs.items()) epoch_logs.set("val_" + k, v);
    }
    callbacks.on_epoch_end(epoch, epoch_logs);
  }
  callbacks.on_train_end(epoch_logs);
  return *history;
}

Logs Model::run_test_loop(BatchSource& batches, CallbackList& callbacks, int verbose) {
  instrumentation::StepScope step_scope;  // the loop's steps end with it
  ParallelScope parallel(*this, train_->parallel, model_where(*this) + " evaluate");
  if (train_->parallel && train_->parallel->rank() != 0) callbacks.drop_chief_only();
  if (verbose >= 0) {  // verbose -1: inside fit, whose params (epochs, steps) stay in force
    callbacks.set_model(this);
    callbacks.set_params({{"steps", static_cast<double>(batches.steps())}, {"verbose", verbose}});
  }
  reset_metrics();
  callbacks.on_test_begin({});
  batches.begin_epoch(0);
  int step = 0;
  while (auto batch = next_batch(batches)) {
    if (instrumentation::active()) instrumentation::set_step({"test", -1, step});
    profiler::StepSpan step_span("test", -1, step);
    callbacks.on_test_batch_begin(step, {});
    test_step(batch->x, batch->y, batch->sample_weight);
    callbacks.on_test_batch_end(step++, collect_metrics());
  }
  warn_if_ran_out(*this, batches, verbose < 0 ? "fit (validation)" : "evaluate", step);
  Logs logs = collect_metrics();
  callbacks.on_test_end(logs);
  return logs;
}

TensorList Model::run_predict_loop(BatchSource& batches, const PredictOptions& o) {
  instrumentation::StepScope step_scope;  // the loop's steps end with it
  CallbackList callbacks(o.callbacks);
  if (o.verbose) callbacks.add(std::make_shared<ProgbarLogger>(o.verbose));
  // Every process predicts every row; one progress bar is enough.
  if (auto d = distribution::distribution(); d && d->process_id() != 0) callbacks.drop_chief_only();
  callbacks.set_model(this);
  callbacks.set_params({{"steps", static_cast<double>(batches.steps())}, {"verbose", o.verbose}});
  callbacks.on_predict_begin({});
  std::vector<TensorList> parts;  // per output
  batches.begin_epoch(0);
  int step = 0;
  while (auto batch = next_batch(batches)) {
    if (instrumentation::active()) instrumentation::set_step({"predict", -1, step});
    profiler::StepSpan step_span("predict", -1, step);
    callbacks.on_predict_batch_begin(step, {});
    TensorList out = predict_on_batch(batch->x);
    parts.resize(out.size());
    for (size_t i = 0; i < out.size(); ++i) parts[i].push_back(out[i]);
    callbacks.on_predict_batch_end(step++, {});
  }
  warn_if_ran_out(*this, batches, "predict", step);
  callbacks.on_predict_end({});
  NoGradGuard no_grad;
  TensorList result;
  for (auto& p : parts) result.push_back(p.size() == 1 ? p[0] : ops::concatenate(p, 0));
  return result;
}

Logs Model::evaluate(const Tensor& x, const Tensor& y, const EvaluateOptions& o) {
  return evaluate(TensorList{x}, TensorList{y}, o);
}

Logs Model::evaluate(const TensorList& x, const TensorList& y, const EvaluateOptions& o) {
  if (!compiled())
    fail<StateError>(model_where(*this) + " evaluate", "a compiled model", "an uncompiled one",
                     "Call compile() before evaluate().");
  check_batch_size(*this, "evaluate", o.batch_size);
  check_steps(*this, "evaluate", "steps", o.steps);
  check_data(*this, "evaluate", x, y, o.sample_weight);
  CallbackList callbacks(o.callbacks);
  if (o.verbose) callbacks.add(std::make_shared<ProgbarLogger>(o.verbose));
  TensorBatches batches(x, y, o.sample_weight, o.batch_size, false, 0, o.steps);
  return run_test_loop(batches, callbacks, o.verbose);
}

Logs Model::evaluate(const data::Dataset& dataset, const EvaluateOptions& o) {
  const std::string where = model_where(*this) + " evaluate";
  if (!compiled())
    fail<StateError>(where, "a compiled model", "an uncompiled one", "Call compile() before evaluate().");
  CallbackList callbacks(o.callbacks);
  if (o.verbose) callbacks.add(std::make_shared<ProgbarLogger>(o.verbose));
  DatasetBatches batches = one_pass(*this, dataset, o.steps, "evaluate");
  return run_test_loop(batches, callbacks, o.verbose);
}

Tensor Model::predict(const data::Dataset& dataset, const PredictOptions& o) {
  DatasetBatches batches = one_pass(*this, dataset, o.steps, "predict");
  TensorList out = run_predict_loop(batches, o);
  if (out.size() != 1)
    fail<ValueError>(model_where(*this) + " predict", "a single-output model", std::to_string(out.size()) + " outputs");
  return out[0];
}

Tensor Model::predict(const Tensor& x, const PredictOptions& o) {
  TensorList out = predict(TensorList{x}, o);
  if (out.size() != 1)
    fail<ValueError>(model_where(*this) + " predict", "a single-output model", std::to_string(out.size()) + " outputs",
                     "Use the TensorList form.");
  return out[0];
}

TensorList Model::predict(const TensorList& x, const PredictOptions& o) {
  check_batch_size(*this, "predict", o.batch_size);
  check_steps(*this, "predict", "steps", o.steps);
  check_data(*this, "predict", x, {}, Tensor());
  TensorBatches batches(x, {}, Tensor(), o.batch_size, false, 0, o.steps);
  return run_predict_loop(batches, o);
}

Logs Model::train_on_batch(const Tensor& x, const Tensor& y) { return train_on_batch(TensorList{x}, TensorList{y}); }

Logs Model::train_on_batch(const TensorList& x, const TensorList& y, const Tensor& sw) {
  if (!compiled())
    fail<StateError>(model_where(*this) + " train_on_batch", "a compiled model", "an uncompiled one",
                     "Call compile() first.");
  check_data(*this, "train_on_batch", x, y, sw);
  reset_metrics();
  return train_step(x, y, sw);
}

Logs Model::test_on_batch(const Tensor& x, const Tensor& y) { return test_on_batch(TensorList{x}, TensorList{y}); }

Logs Model::test_on_batch(const TensorList& x, const TensorList& y, const Tensor& sw) {
  if (!compiled())
    fail<StateError>(model_where(*this) + " test_on_batch", "a compiled model", "an uncompiled one",
                     "Call compile() first.");
  check_data(*this, "test_on_batch", x, y, sw);
  reset_metrics();
  test_step(x, y, sw);
  return collect_metrics();
}

const TensorList& Model::last_train_x() const { return train_->last_train_x; }

Tensor Model::predict_on_batch(const Tensor& x) { return predict_on_batch(TensorList{x})[0]; }

TensorList Model::predict_on_batch(const TensorList& x) {
  NoGradGuard no_grad;
  BatchData placed = place_batch({x, {}, {}}, "predict");
  DeviceScope on_device(device());
  TensorList out = (*this)(placed.x, CallArgs{.training = false});
  // Results go back to the user on the host, as Keras returns NumPy arrays.
  for (auto& t : out) t = t.to(Device::cpu());
  return out;
}

}  // namespace keras
