#include "keras/saving/saving.h"

#include <ctime>

#include "backend/errors.h"
#include "keras/saving/compile_config.h"
#include "keras/utils/zip.h"
#include "keras/utils/file_util.h"
#include "keras/saving/hdf5/hdf5.h"
#include "keras/saving/legacy_weights.h"
#include "keras/saving/weights_h5.h"
#include "keras/saving/weights_h5_file.h"
#include "optimizers/optimizer.h"

namespace keras {
namespace {

// The Keras 3 release whose `.keras` layout this framework writes (metadata.json).
constexpr const char* kKerasVersion = "3.15.1";

// Re-throws a framework error with `context` ("m.keras: config.json") in front, keeping its type,
// so errors from deep inside a load still name the file.
[[noreturn]] void rethrow_in(const std::string& context) {
  try {
    throw;
  } catch (const ShapeError& e) {
    throw ShapeError(context + ": " + e.what());
  } catch (const ValueError& e) {
    throw ValueError(context + ": " + e.what());
  } catch (const TypeError& e) {
    throw TypeError(context + ": " + e.what());
  } catch (const IndexError& e) {
    throw IndexError(context + ": " + e.what());
  } catch (const NotImplementedError& e) {
    throw NotImplementedError(context + ": " + e.what());
  } catch (const IOError& e) {
    throw;  // IOErrors already name the file
  } catch (const StateError& e) {
    throw StateError(context + ": " + e.what());
  } catch (const nlohmann::json::exception& e) {
    throw ValueError(error_message(context, "valid JSON", e.what()));
  }
}

template <class F>
auto with_context(const std::string& context, F&& f) {
  try {
    return f();
  } catch (const IOError&) {
    throw;
  } catch (const Error&) {
    rethrow_in(context);
  } catch (const nlohmann::json::exception&) {
    rethrow_in(context);
  }
}

json parse_json(const std::string& text, const std::string& where) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    fail<ValueError>(where, "valid JSON", "a parse error at byte " + std::to_string(e.byte), "The file is corrupt.");
  }
}

std::string now_string() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d@%H:%M:%S", &tm);
  return buf;
}

const optimizers::Optimizer* saved_optimizer(const Model& model, const SaveOptions& options) {
  if (!options.include_optimizer || !model.compiled()) return nullptr;
  return model.optimizer();
}

// ---- .keras ----

void save_keras_archive(const Model& model, const std::string& path, const SaveOptions& options) {
  json config = serialize_model(model);
  if (saved_optimizer(model, options)) config["compile_config"] = saving::compile_config(model);
  auto weights = hdf5::File::create_in_memory(path + ": model.weights.h5");
  auto root = weights.root();
  write_weights_tree(root, model, saved_optimizer(model, options));
  const json metadata = {{"keras_version", kKerasVersion}, {"date_saved", now_string()}};
  std::vector<zip::Entry> entries = {{"metadata.json", metadata.dump()},
                                           {"config.json", config.dump()},
                                           {"model.weights.h5", weights.image()}};
  write_file_atomic(path, zip::archive_bytes(entries, /*compress=*/false, path));
}

struct KerasArchive {
  json config;
  std::string weights;  // model.weights.h5 bytes
};

KerasArchive read_keras_archive(const std::string& path) {
  const auto entries = zip::read_archive_bytes(read_file_bytes(path), path);
  const zip::Entry* config = nullptr;
  const zip::Entry* weights = nullptr;
  for (const auto& e : entries) {
    if (e.name == "config.json") config = &e;
    if (e.name == "model.weights.h5") weights = &e;
  }
  const std::string where = "'" + path + "'";
  if (!config) fail<IOError>(where, "a .keras archive with config.json", "no such entry", "The file is not a Keras model.");
  if (!weights) {
    const bool npz = std::any_of(entries.begin(), entries.end(), [](const auto& e) { return e.name == "model.weights.npz"; });
    fail<IOError>(where, "a .keras archive with model.weights.h5", npz ? "model.weights.npz" : "no weights entry",
                  npz ? "Save it with weights_format=\"h5\" (the default)." : "The file is not a Keras model.");
  }
  return {parse_json(config->data, where + ": config.json"), weights->data};
}

std::shared_ptr<Model> load_keras_archive(const std::string& path, const LoadModelOptions& options) {
  KerasArchive archive = read_keras_archive(path);
  const std::string config_where = "'" + path + "': config.json";
  auto model = with_context(config_where, [&] { return model_from_config(archive.config); });
  const json cc = archive.config.value("compile_config", json(nullptr));
  // A model saved before compile() has "compile_config": {} (Keras 3) or null: it loads uncompiled.
  const bool compile = options.compile && cc.is_object() && !cc.empty();
  if (compile)
    with_context(config_where, [&] { model->compile(saving::compile_options_from_config(cc, *model, "compile_config")); });
  auto file = hdf5::File::open_image(archive.weights, path + ": model.weights.h5");
  with_context("'" + path + "': model.weights.h5", [&] {
    return read_weights_tree(file.root(), *model, compile ? model->optimizer() : nullptr);
  });
  return model;
}

// ---- legacy .h5 ----

void save_legacy_h5(const Model& model, const std::string& path, const SaveOptions& options) {
  auto file = hdf5::File::create_in_memory(path);
  auto root = file.root();
  root.write_string_attr("keras_version", kLegacyKerasVersion);
  root.write_string_attr("backend", kLegacyBackend);
  root.write_string_attr("model_config", to_keras2(serialize_model(model)).dump());
  const auto* optimizer = saved_optimizer(model, options);
  if (optimizer) root.write_string_attr("training_config", saving::training_config(model).dump());
  auto weights = root.create_group("model_weights");
  write_legacy_weights(weights, model);
  if (optimizer && optimizer->built()) {
    auto group = root.create_group("optimizer_weights");
    write_legacy_optimizer_weights(group, *optimizer);
  }
  write_file_atomic(path, file.image());
}

std::shared_ptr<Model> load_legacy_h5(const std::string& path, const LoadModelOptions& options) {
  auto file = hdf5::File::open(path);
  auto root = file.root();
  const std::string where = "'" + path + "'";
  if (!root.has_attr("model_config"))
    fail<IOError>(where, "a full-model .h5 with a model_config attribute", "a file without one",
                  "A weights-only file: build the model in code and call load_weights().");
  const json config = parse_json(root.read_string_attr("model_config"), where + ": model_config");
  auto model = with_context(where + ": model_config", [&] { return model_from_config(config); });
  json tc = nullptr;
  if (options.compile && root.has_attr("training_config"))
    tc = parse_json(root.read_string_attr("training_config"), where + ": training_config");
  if (tc.is_object())
    with_context(where + ": training_config",
                 [&] { model->compile(saving::compile_options_from_config(tc, *model, "training_config")); });
  with_context(where, [&] { return read_legacy_weights(root, *model); });
  if (tc.is_object() && root.has_group("optimizer_weights"))
    with_context(where, [&] { return read_legacy_optimizer_weights(root.open_group("optimizer_weights"), *model->optimizer(), *model); });
  return model;
}

}  // namespace

void save_model(const Model& model, const std::string& path, const SaveOptions& options) {
  if (path.ends_with(".keras")) return save_keras_archive(model, path, options);
  if (path.ends_with(".weights.h5"))
    fail<ValueError>("save_model('" + path + "')", "a path ending in .keras or .h5", "a .weights.h5 path",
                     "Use save_weights() for weights only.");
  if (path.ends_with(".h5") || path.ends_with(".hdf5")) return save_legacy_h5(model, path, options);
  fail<ValueError>("save_model('" + path + "')", "a path ending in .keras or .h5", "'" + path + "'");
}

std::shared_ptr<Model> load_model(const std::string& path, const LoadModelOptions& options) {
  if (path.ends_with(".keras")) return load_keras_archive(path, options);
  if (path.ends_with(".h5") || path.ends_with(".hdf5")) return load_legacy_h5(path, options);
  fail<ValueError>("load_model('" + path + "')", "a path ending in .keras or .h5", "'" + path + "'");
}

void save_weights(const Model& model, const std::string& path) { save_weights_h5(model, path); }

LoadReport load_weights(Model& model, const std::string& path, const LoadWeightsOptions& options) {
  if (!path.ends_with(".keras")) return load_weights_h5(model, path, options);
  KerasArchive archive = read_keras_archive(path);
  auto file = hdf5::File::open_image(archive.weights, path + ": model.weights.h5");
  return with_context("'" + path + "': model.weights.h5", [&] { return read_weights_tree(file.root(), model, nullptr, options); });
}

// ---- Model members ----

void Model::save(const std::string& path) const { save_model(*this, path); }
void Model::save(const std::string& path, const SaveOptions& options) const { save_model(*this, path, options); }
void Model::save_weights(const std::string& path) const { keras::save_weights(*this, path); }
LoadReport Model::load_weights(const std::string& path) { return keras::load_weights(*this, path); }
LoadReport Model::load_weights(const std::string& path, const LoadWeightsOptions& options) {
  return keras::load_weights(*this, path, options);
}
std::string Model::to_json() const { return keras::to_json(*this); }

}  // namespace keras
