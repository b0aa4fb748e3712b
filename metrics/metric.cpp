#include "metrics/metric.h"

#include "backend/named_registry.h"

namespace keras::metrics {

namespace {

NamedRegistry<MetricFactory>& registry() {
  static NamedRegistry<MetricFactory> r;
  return r;
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

MetricPtr make(const std::string& identifier, const json& config) {
  std::string cls = canonical_class_name(identifier);
  if (cls.empty())
    fail<ValueError>("metrics::get", "a known metric (" + join(registered_metrics()) + ")", "'" + identifier + "'",
                     "Custom metrics must be registered with metrics::register_metric.");
  return registry().factory(cls)(config);
}

}  // namespace

Metric::Metric(std::string name, std::string dtype) : name_(std::move(name)), dtype_(std::move(dtype)) {}

Tensor Metric::result_tensor() const { return Tensor::scalar(result(), DType::float32, Device::cpu()); }

void Metric::set_state(const std::vector<double>& values) {
  if (!values.empty())
    fail<ValueError>(where(), "no state values", std::to_string(values.size()) + " values");
}

json Metric::get_config() const { return json{{"name", name_}, {"dtype", dtype_}}; }

std::string Metric::where() const { return "Metric '" + name_ + "' (" + class_name() + ")"; }

void read_base_config(const json& config, std::string& name, std::string& dtype) {
  if (config.contains("name") && config["name"].is_string()) name = config["name"].get<std::string>();
  if (config.contains("dtype")) {
    const json& d = config["dtype"];
    if (d.is_string()) dtype = d.get<std::string>();
    else if (d.is_object() && d.contains("config") && d["config"].contains("name")) dtype = d["config"]["name"].get<std::string>();
  }
}

void register_metric(const std::string& class_name, MetricFactory factory, const std::vector<std::string>& aliases) {
  registry().add(class_name, std::move(factory), aliases);
}

std::string canonical_class_name(const std::string& identifier) { return registry().canonical(identifier); }

std::vector<std::string> registered_metrics() { return registry().names(); }

MetricPtr get(const std::string& identifier) {
  MetricPtr m = make(identifier, json::object());
  m->set_name(identifier);
  return m;
}

MetricPtr deserialize(const json& config) {
  if (config.is_string()) return get(config.get<std::string>());
  if (!config.is_object() || !config.contains("class_name") || !config["class_name"].is_string())
    fail<ValueError>("metrics::deserialize", "a metric name or an object with \"class_name\"", config.dump());
  const std::string cls = config["class_name"].get<std::string>();
  if (cls == "function" && config.contains("config") && config["config"].is_string())
    return get(config["config"].get<std::string>());
  json inner = config.contains("config") && config["config"].is_object() ? config["config"] : json::object();
  return make(cls, inner);
}

json serialize(const Metric& metric) {
  return json{{"module", "keras.metrics"},
              {"class_name", metric.class_name()},
              {"config", metric.get_config()},
              {"registered_name", nullptr}};
}

}  // namespace keras::metrics
