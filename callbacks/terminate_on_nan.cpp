#include "callbacks/terminate_on_nan.h"

#include <cmath>
#include <iostream>
#include <map>
#include <type_traits>
#include <utility>

#include "backend/autodiff.h"
#include "callbacks/monitor.h"
#include "keras/models/model.h"

namespace keras::callbacks {

namespace {

using NodeKey = std::pair<const Layer*, int>;

// Runs `model`'s graph node by node on `inputs`; stops at the first node whose output is not
// finite, setting `culprit` to its path (prefix + layer name). Returns the model's outputs
// (empty once a culprit is found).
TensorList walk(Model& model, const TensorList& inputs, const std::string& prefix, std::string& culprit) {
  std::map<NodeKey, TensorList> values;
  const auto& model_inputs = model.inputs();
  for (size_t i = 0; i < model_inputs.size() && i < inputs.size(); ++i) {
    if (!all_finite(inputs[i])) {
      culprit = prefix.empty() ? "<input>" : prefix.substr(0, prefix.size() - 1);
      return {};
    }
    values[{model_inputs[i].layer.get(), model_inputs[i].node_index}] = {inputs[i]};
  }
  // Iterative post-order from the outputs: a node runs once all its inputs have values.
  std::vector<NodeKey> stack;
  std::map<NodeKey, const KerasTensor*> owners;  // a tensor of each node, for its layer and call
  for (const auto& out : model.outputs()) {
    stack.push_back({out.layer.get(), out.node_index});
    owners[stack.back()] = &out;
  }
  while (!stack.empty()) {
    NodeKey key = stack.back();
    if (values.count(key)) {
      stack.pop_back();
      continue;
    }
    const LayerPtr& layer = owners.at(key)->layer;
    const LayerNode& node = *owners.at(key)->node;
    bool ready = true;
    for (const auto& kt : node.inputs) {
      NodeKey dep{kt.layer.get(), kt.node_index};
      if (!values.count(dep)) {
        ready = false;
        owners[dep] = &kt;
        stack.push_back(dep);
      }
    }
    if (!ready) continue;
    stack.pop_back();
    TensorList args;
    for (const auto& kt : node.inputs) args.push_back(values.at({kt.layer.get(), kt.node_index}).at(kt.tensor_index));
    TensorList outs;
    if (auto* inner = dynamic_cast<Model*>(layer.get())) {
      outs = walk(*inner, args, prefix + inner->name() + "/", culprit);
      if (!culprit.empty()) return {};
    } else {
      // Inference mode: nothing (moving statistics, dropout streams) changes.
      outs = (*layer)(args, CallArgs{.training = false});
    }
    for (const auto& t : outs)
      if (!all_finite(t)) {
        culprit = prefix + layer->name();
        return {};
      }
    values[key] = std::move(outs);
  }
  TensorList result;
  for (const auto& out : model.outputs()) result.push_back(values.at({out.layer.get(), out.node_index}).at(out.tensor_index));
  return result;
}

std::string first_bad_weights(const Model& model, const std::string& prefix, std::string* bad_weight) {
  for (const auto& layer : model.layers()) {
    if (auto* inner = dynamic_cast<const Model*>(layer.get())) {
      std::string found = first_bad_weights(*inner, prefix + inner->name() + "/", bad_weight);
      if (!found.empty()) return found;
      continue;
    }
    for (const auto& v : layer->weights())
      if (!all_finite(v.value())) {
        if (bad_weight) *bad_weight = v.path();
        return prefix + layer->name();
      }
  }
  return "";
}

}  // namespace

std::string first_non_finite_output(Model& model, const TensorList& inputs) {
  NoGradGuard no_grad;
  std::string culprit;
  walk(model, inputs, "", culprit);
  return culprit;
}

std::string first_non_finite_weights(const Model& model, std::string* bad_weight) {
  return first_bad_weights(model, "", bad_weight);
}

TerminateOnNaNImpl::TerminateOnNaNImpl(TerminateOnNaNOptions options) : options_(std::move(options)) {
  if (!options_.last_batch) options_.last_batch = [](const Model& m) { return m.last_train_x(); };
}

void TerminateOnNaNImpl::on_train_begin(const Logs&) {
  terminated_ = false;
  culprit_.clear();
  report_.clear();
}

void TerminateOnNaNImpl::on_train_batch_end(int batch, const Logs& logs) {
  std::optional<double> loss = logs.get("loss");
  if (!loss || std::isfinite(*loss)) return;
  terminated_ = true;
  report_ = "Batch " + std::to_string(batch) + ": Invalid loss, terminating training";
  Model* m = model();
  if (m) m->stop_training = true;
  if (m && options_.diagnose) {
    // The diagnosis must never turn a clean stop into a crash.
    try {
      std::string bad_weight;
      std::string weights_culprit = first_non_finite_weights(*m, &bad_weight);
      TensorList x = options_.last_batch(*m);
      if (!x.empty()) {
        try {
          culprit_ = first_non_finite_output(*m, x);
        } catch (const std::exception&) {
          x.clear();  // no graph to walk (a subclassed model): fall back to the weights
        }
      }
      if (!x.empty()) {
        if (culprit_ == "<input>")
          report_ += ". The batch input itself holds NaN or infinite values";
        else if (!culprit_.empty())
          report_ += ". First layer with a non-finite output: '" + culprit_ + "'";
        else
          report_ += ". Every layer output is finite in inference mode: the loss itself (or a training-mode "
                     "layer) produced the non-finite value";
      } else if (!weights_culprit.empty()) {
        culprit_ = weights_culprit;
        report_ += ". First layer with non-finite weights: '" + culprit_ + "'";
      }
      if (!weights_culprit.empty())
        report_ += " (after this step's update the weight '" + bad_weight + "' is not finite)";
    } catch (const std::exception& e) {
      report_ += std::string(". (Could not locate the layer: ") + e.what() + ")";
    }
  }
  report_ += ".";
  if (options_.print) std::cout << report_ << std::endl;
}

std::shared_ptr<TerminateOnNaNImpl> TerminateOnNaN(TerminateOnNaNOptions options) {
  return std::make_shared<TerminateOnNaNImpl>(std::move(options));
}

}  // namespace keras::callbacks
