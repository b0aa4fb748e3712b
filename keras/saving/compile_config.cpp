#include "keras/saving/compile_config.h"

#include "backend/errors.h"
#include "keras/saving/detail/keras2_values.h"
#include "keras/models/train_state.h"
#include "optimizers/loss_scale_optimizer.h"
#include "layers/layer_config.h"

namespace keras::saving {
namespace {

json metric_json(const NamedOr<metrics::Metric>& m) {
  if (m.object) return metrics::serialize(*m.object);
  return m.name;
}

// A loss given by name is written by its full function name ("mse" -> "mean_squared_error"):
// Keras 3.15 cannot read some short aliases back from a saved training_config.
json loss_name_json(const NamedOr<losses::Loss>& l) {
  if (l.object) return losses::serialize(*l.object);
  const std::string cls = losses::canonical_class_name(l.name);
  return cls.empty() ? l.name : snake_case(cls);
}

json loss_json(const CompileOptions& o) {
  auto one = [](const NamedOr<losses::Loss>& l) { return loss_name_json(l); };
  if (o.losses.empty()) return one(o.loss);
  json list = json::array();
  for (const auto& l : o.losses) list.push_back(one(l));
  return list;
}

json metric_list(const std::vector<NamedOr<metrics::Metric>>& ms) {
  json list = json::array();
  for (const auto& m : ms) list.push_back(metric_json(m));
  return list;
}

json metrics_json(const CompileOptions& o) {
  if (!o.output_metrics.empty()) {
    json per_output = json::array();
    for (const auto& ms : o.output_metrics) per_output.push_back(metric_list(ms));
    return per_output;
  }
  return o.metrics.empty() ? json(nullptr) : metric_list(o.metrics);
}

json loss_weights_json(const CompileOptions& o) {
  return o.loss_weights.empty() ? json(nullptr) : json(o.loss_weights);
}

// ---- reading ----

// Output names of the model, to map dict-valued arguments onto output positions.
std::vector<std::string> output_names(const Model& model) {
  std::vector<std::string> names;
  for (const auto& t : model.outputs()) names.push_back(t.layer->name());
  return names;
}

// A per-output argument given as a dict keyed by output name, as a list in output order.
json dict_to_list(const json& j, const Model& model, const std::string& where) {
  if (!j.is_object() || j.contains("class_name")) return j;
  auto names = output_names(model);
  json list = json::array();
  for (const auto& name : names) {
    if (!j.contains(name)) fail<ValueError>(where, "an entry for output '" + name + "'", j.dump());
    list.push_back(j[name]);
  }
  if (j.size() != names.size()) fail<ValueError>(where, std::to_string(names.size()) + " entries (one per output)", j.dump());
  return list;
}

NamedOr<losses::Loss> read_loss(const json& j, const std::string& where) {
  if (j.is_string()) {
    losses::get(j.get<std::string>());  // validates the name now, with the list of known ones
    return j.get<std::string>();
  }
  if (!j.is_object()) fail<ValueError>(where, "a loss name or object", j.dump());
  return losses::deserialize(j);
}

NamedOr<metrics::Metric> read_metric(const json& j, const std::string& where) {
  if (j.is_string()) {
    const auto name = j.get<std::string>();
    if (name != "accuracy" && name != "acc") metrics::get(name);  // validates the name
    return name;
  }
  if (!j.is_object()) fail<ValueError>(where, "a metric name or object", j.dump());
  // Keras 2 wraps metric functions in MeanMetricWrapper {"name": "accuracy", "fn": "..."}: the
  // name is what compile() was given, so it resolves the same way ("accuracy" by loss and shape).
  auto [cls, config] = config::unwrap_object(j, where);
  if (cls == "MeanMetricWrapper" && config.contains("name") && config["name"].is_string())
    return read_metric(config["name"], where);
  return metrics::deserialize(j);
}

std::vector<NamedOr<metrics::Metric>> read_metric_list(const json& j, const std::string& where) {
  std::vector<NamedOr<metrics::Metric>> out;
  if (j.is_null()) return out;
  if (!j.is_array()) return {read_metric(j, where)};
  for (size_t i = 0; i < j.size(); ++i) out.push_back(read_metric(j[i], where + "[" + std::to_string(i) + "]"));
  return out;
}

bool is_nested_list(const json& j) {
  if (!j.is_array() || j.empty()) return false;
  for (const auto& e : j)
    if (!e.is_array() && !e.is_null()) return false;
  return true;
}

}  // namespace

json compile_config(const Model& model) {
  if (!model.compiled()) return nullptr;
  const CompileOptions& o = model.compile_options();
  return {{"optimizer", optimizers::serialize(*model.optimizer())},
          {"loss", loss_json(o)},
          {"loss_weights", loss_weights_json(o)},
          {"metrics", metrics_json(o)},
          {"weighted_metrics", o.weighted_metrics.empty() ? json(nullptr) : metric_list(o.weighted_metrics)},
          {"run_eagerly", false},
          {"steps_per_execution", 1},
          {"jit_compile", false}};
}

namespace {

// An optimizer as a tf_keras training_config holds it.
json legacy_optimizer(const optimizers::Optimizer& opt) {
  // tf_keras's dynamic loss scaling wraps the inner optimizer's own form.
  if (auto* lso = dynamic_cast<const optimizers::LossScaleOptimizerImpl*>(&opt)) {
    json c = lso->get_config();
    return {{"class_name", "LossScaleOptimizerV3"},
            {"config", {{"inner_optimizer", legacy_optimizer(*lso->inner_optimizer())},
                        {"dynamic", true},
                        {"initial_scale", c["initial_scale"]},
                        {"dynamic_growth_steps", c["dynamic_growth_steps"]}}}};
  }
  // tf_keras 2.11+ names its (non-legacy) optimizers "Custom>Adam" and passes every config key
  // to the constructor, which knows neither loss_scale_factor nor gradient_accumulation_steps;
  // Keras 3 reads this form too.
  json opt_config = opt.get_config();
  for (const char* key : {"loss_scale_factor", "gradient_accumulation_steps"})
    if (opt_config.contains(key) && opt_config[key].is_null()) opt_config.erase(key);
  opt_config["is_legacy_optimizer"] = false;
  // Keras 3 resolves a legacy "Custom>" optimizer by its config name: it must be the class name.
  opt_config["name"] = opt.class_name();
  return {{"class_name", "Custom>" + opt.class_name()}, {"config", opt_config}};
}

}  // namespace

json training_config(const Model& model) {
  if (!model.compiled()) return nullptr;
  const CompileOptions& o = model.compile_options();
  return keras2_values({{"loss", loss_json(o)},
                        {"metrics", metrics_json(o)},
                        {"weighted_metrics", o.weighted_metrics.empty() ? json(nullptr) : metric_list(o.weighted_metrics)},
                        {"loss_weights", loss_weights_json(o)},
                        {"optimizer_config", legacy_optimizer(*model.optimizer())}});
}

CompileOptions compile_options_from_config(const json& c, const Model& model, const std::string& where) {
  if (!c.is_object()) fail<ValueError>(where, "a compile config object", c.dump());
  CompileOptions o;
  const json& opt = c.contains("optimizer") ? c["optimizer"] : c.value("optimizer_config", json(nullptr));
  if (opt.is_null()) fail<ValueError>(where, "an 'optimizer' or 'optimizer_config' entry", "none");
  o.optimizer = optimizers::from_config(opt);

  const size_t outputs = model.outputs().size();
  json loss = dict_to_list(c.value("loss", json(nullptr)), model, where + " loss");
  if (loss.is_null()) fail<ValueError>(where, "a 'loss' entry", "none");
  if (loss.is_array()) {
    if (loss.size() != outputs) fail<ValueError>(where + " loss", std::to_string(outputs) + " losses", loss.dump());
    for (size_t i = 0; i < loss.size(); ++i) o.losses.push_back(read_loss(loss[i], where + " loss[" + std::to_string(i) + "]"));
  } else {
    o.loss = read_loss(loss, where + " loss");
  }

  json weights = dict_to_list(c.value("loss_weights", json(nullptr)), model, where + " loss_weights");
  if (weights.is_number()) weights = json::array({weights});
  if (weights.is_array())
    for (const auto& w : weights) {
      if (!w.is_number()) fail<ValueError>(where + " loss_weights", "numbers", weights.dump());
      o.loss_weights.push_back(w.get<double>());
    }

  json ms = dict_to_list(c.value("metrics", json(nullptr)), model, where + " metrics");
  if (is_nested_list(ms) && ms.size() == outputs) {
    // One list per output; Keras 2 nests even a single output's list.
    if (outputs == 1) {
      o.metrics = read_metric_list(ms[0], where + " metrics[0]");
    } else {
      for (size_t i = 0; i < ms.size(); ++i)
        o.output_metrics.push_back(read_metric_list(ms[i], where + " metrics[" + std::to_string(i) + "]"));
    }
  } else {
    o.metrics = read_metric_list(ms, where + " metrics");
  }
  json wms = c.value("weighted_metrics", json(nullptr));
  if (is_nested_list(wms) && wms.size() == 1) wms = wms[0];
  o.weighted_metrics = read_metric_list(wms, where + " weighted_metrics");
  return o;
}

}  // namespace keras::saving
