// compile() and what it sets up for training: the optimizer, the losses (weighted, one per
// output) and the metrics, which train_step and test_step update and report as logs.
#include <set>

#include "backend/autodiff.h"
#include "backend/ops.h"
#include "keras/models/train_state.h"
#include "optimizers/loss_scale_optimizer.h"

namespace keras {

bool Model::compiled() const { return train_->compiled; }
optimizers::Optimizer* Model::optimizer() const { return train_->optimizer.get(); }
const CompileOptions& Model::compile_options() const {
  if (!compiled()) fail<StateError>("Model '" + name() + "'", "a compiled model", "an uncompiled one", "Call compile() first.");
  return train_->given;
}
losses::Loss* Model::loss() const { return train_->losses.empty() ? nullptr : train_->losses[0].get(); }

std::vector<std::shared_ptr<metrics::Metric>> Model::metrics() const {
  std::vector<std::shared_ptr<metrics::Metric>> out;
  for (const auto& group : {&train_->metrics, &train_->weighted_metrics})
    for (const auto& per_output : *group) out.insert(out.end(), per_output.begin(), per_output.end());
  return out;
}

void Model::compile(const CompileOptions& o) {
  auto& st = *train_;
  const std::string where = "Model '" + name() + "' compile";
  size_t outputs = has_graph() ? this->outputs().size() : 1;
  if (o.loss.empty() && o.losses.empty()) fail<ValueError>(where, "a loss", "none", "Pass .loss = \"mse\" or a loss object.");
  if (!o.loss.empty() && !o.losses.empty()) fail<ValueError>(where, "either loss or losses", "both");
  if (!o.losses.empty() && o.losses.size() != outputs)
    fail<ValueError>(where, std::to_string(outputs) + " losses (one per output)", std::to_string(o.losses.size()));
  if (!o.loss_weights.empty() && o.loss_weights.size() != outputs)
    fail<ValueError>(where, std::to_string(outputs) + " loss_weights", std::to_string(o.loss_weights.size()));
  if (!o.output_metrics.empty() && o.output_metrics.size() != outputs)
    fail<ValueError>(where, std::to_string(outputs) + " output_metrics lists", std::to_string(o.output_metrics.size()));
  auto resolve_loss = [](const NamedOr<losses::Loss>& l) { return l.object ? l.object : losses::get(l.name); };
  TrainState fresh;
  fresh.optimizer = o.optimizer.object ? o.optimizer.object : optimizers::get(o.optimizer.name);
  // Keras wraps the optimizer of a mixed_float16 model: float16 gradients need loss scaling.
  if (dtype_policy().name == "mixed_float16" &&
      !dynamic_cast<const optimizers::LossScaleOptimizerImpl*>(fresh.optimizer.get()))
    fresh.optimizer = optimizers::LossScaleOptimizer(fresh.optimizer);
  for (size_t i = 0; i < outputs; ++i) {
    fresh.losses.push_back(resolve_loss(o.losses.empty() ? o.loss : o.losses[i]));
    fresh.loss_weights.push_back(o.loss_weights.empty() ? 1.0 : o.loss_weights[i]);
    fresh.metric_args.push_back(o.output_metrics.empty() ? o.metrics : o.output_metrics[i]);
    fresh.weighted_metric_args.push_back(o.weighted_metrics);
    fresh.output_names.push_back(has_graph() ? this->outputs()[i].layer->name() : "");
  }
  fresh.loss_tracker = std::make_shared<metrics::MeanImpl>(metrics::MeanOptions{.name = "loss"});
  if (outputs > 1)
    for (size_t i = 0; i < outputs; ++i)
      fresh.output_loss_trackers.push_back(
          std::make_shared<metrics::MeanImpl>(metrics::MeanOptions{.name = fresh.output_names[i] + "_loss"}));
  // Re-compiling after a trainability change: slots for the new trainable set (kept by path).
  if (fresh.optimizer->built()) fresh.optimizer->build(trainable_weights());
  fresh.compiled = true;
  fresh.given = o;
  fresh.given.optimizer = fresh.optimizer;  // the object that holds the state, not its name
  st = std::move(fresh);
  stop_training = false;
}

void Model::build_metrics(const TensorList& y, const TensorList& y_pred) {
  auto& st = *train_;
  if (st.metrics_built) return;
  if (y.size() != st.losses.size() || y_pred.size() != st.losses.size())
    fail<ValueError>("Model '" + name() + "'", std::to_string(st.losses.size()) + " targets (one per output)",
                     std::to_string(y.size()));
  bool several = st.losses.size() > 1;
  std::set<std::string> names;
  auto build = [&](const std::vector<std::vector<NamedOr<metrics::Metric>>>& args, bool weighted) {
    std::vector<std::vector<std::shared_ptr<metrics::Metric>>> built(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      for (const auto& arg : args[i]) {
        std::shared_ptr<metrics::Metric> m;
        if (arg.object) m = arg.object;
        else if (arg.name == "accuracy" || arg.name == "acc")
          m = metrics::resolve_accuracy(st.losses[i], y[i].shape(), y_pred[i].shape(), arg.name);
        else m = metrics::get(arg.name);
        std::string name = (several ? st.output_names[i] + "_" : "") + m->name();
        if (weighted && names.count(name)) name = (several ? st.output_names[i] + "_" : "") + "weighted_" + m->name();
        m->set_name(name);
        names.insert(name);
        built[i].push_back(m);
      }
    }
    return built;
  };
  // Built aside and swapped in, so a bad metric name leaves no half-built state behind.
  auto plain = build(st.metric_args, false);
  auto weighted = build(st.weighted_metric_args, true);
  st.metrics = std::move(plain);
  st.weighted_metrics = std::move(weighted);
  st.metrics_built = true;
}

void Model::reset_metrics() {
  auto& st = *train_;
  if (st.loss_tracker) st.loss_tracker->reset_state();
  for (auto& t : st.output_loss_trackers) t->reset_state();
  for (auto& m : metrics()) m->reset_state();
}

Logs Model::collect_metrics() const {
  const auto& st = *train_;
  std::vector<std::pair<std::string, metrics::Metric*>> named{{"loss", st.loss_tracker.get()}};
  for (const auto& t : st.output_loss_trackers) named.emplace_back(t->name(), t.get());
  for (const auto& m : metrics()) named.emplace_back(m->name(), m.get());
  if (st.parallel) return st.parallel->global_results(named);
  Logs logs;
  for (const auto& [name, m] : named) logs.set(name, m->result());
  return logs;
}

Tensor Model::compute_loss(const TensorList& y, const TensorList& y_pred, const Tensor& sw, bool track) {
  auto& st = *train_;
  if (y.size() != st.losses.size())
    fail<ValueError>("Model '" + name() + "'", std::to_string(st.losses.size()) + " targets (one per output)",
                     std::to_string(y.size()));
  Tensor total;
  double batch = static_cast<double>(y_pred[0].dim(0));
  for (size_t i = 0; i < st.losses.size(); ++i) {
    Tensor li = (*st.losses[i])(y[i], y_pred[i], sw);
    if (track && !st.output_loss_trackers.empty())
      st.output_loss_trackers[i]->update_values(li.detach(), Tensor::scalar(batch));
    if (st.loss_weights[i] != 1.0) li = ops::multiply(li, st.loss_weights[i]);
    total = total.defined() ? ops::add(total, li) : li;
  }
  for (const auto& r : regularization_losses()) total = ops::add(total, r);
  // Keras 3 weights the loss tracker by the batch size.
  if (track) st.loss_tracker->update_values(total.detach(), Tensor::scalar(batch));
  return total;
}

void Model::update_metrics(const TensorList& y, const TensorList& y_pred, const Tensor& sw) {
  NoGradGuard no_grad;
  build_metrics(y, y_pred);
  auto& st = *train_;
  for (size_t i = 0; i < y.size(); ++i) {
    Tensor pred = y_pred[i].detach();
    if (is_half(pred.dtype())) {  // metrics compute in float32 under mixed precision, as losses
      Tensor mask = pred.keras_mask();
      pred = pred.astype(DType::float32);
      if (mask.defined()) pred.set_keras_mask(mask);
    }
    for (auto& m : st.metrics[i]) m->update_state(y[i], pred);
    for (auto& m : st.weighted_metrics[i]) m->update_state(y[i], pred, sw);
  }
}

}  // namespace keras
