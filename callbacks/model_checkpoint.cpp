#include "callbacks/model_checkpoint.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>

#include "callbacks/py_format.h"
#include "keras/models/model.h"
#include "keras/saving/saving.h"

namespace keras::callbacks {

namespace fs = std::filesystem;

namespace {
const char* kWhere = "ModelCheckpoint";
}

ModelCheckpointImpl::ModelCheckpointImpl(ModelCheckpointOptions options) : options_(std::move(options)) {
  if (options_.filepath.empty()) fail<ValueError>(kWhere, "a filepath", "an empty one");
  if (options_.mode != "auto" && options_.mode != "min" && options_.mode != "max")
    fail<ValueError>(kWhere, "mode 'auto', 'min' or 'max'", "'" + options_.mode + "'");
  if (const auto* s = std::get_if<std::string>(&options_.save_freq)) {
    if (*s != "epoch") fail<ValueError>(kWhere, "save_freq \"epoch\" or a number of batches", "'" + *s + "'");
  } else {
    every_ = std::get<int64_t>(options_.save_freq);
    if (every_ < 1) fail<ValueError>(kWhere, "save_freq >= 1 batches", std::to_string(every_));
  }
  // The default savers write Keras's files, so the path must name one (as Keras 3 demands).
  const auto& path = options_.filepath;
  if (options_.save_weights_only && !options_.save_weights) {
    if (!path.ends_with(".weights.h5") && !path.ends_with(".h5"))
      fail<ValueError>(std::string(kWhere) + " filepath", "a path ending in .weights.h5 with save_weights_only", "'" + path + "'");
    options_.save_weights = [](Model& m, const std::string& p) { keras::save_weights(m, p); };
  }
  if (!options_.save_weights_only && !options_.save_model) {
    if (!path.ends_with(".keras") && !(path.ends_with(".h5") && !path.ends_with(".weights.h5")))
      fail<ValueError>(std::string(kWhere) + " filepath", "a path ending in .keras (or a legacy .h5)", "'" + path + "'",
                       "Use save_weights_only=true with a .weights.h5 path to save weights only.");
    options_.save_model = [](Model& m, const std::string& p) { keras::save_model(m, p); };
  }
}

void ModelCheckpointImpl::on_train_begin(const Logs&) {
  current_epoch_ = 0;
  last_batch_seen_ = 0;
  batches_since_save_ = 0;
}

void ModelCheckpointImpl::on_epoch_begin(int epoch, const Logs&) { current_epoch_ = epoch; }

void ModelCheckpointImpl::on_train_batch_end(int batch, const Logs& logs) {
  if (should_save_on_batch(batch)) save(current_epoch_, batch, logs);
}

void ModelCheckpointImpl::on_epoch_end(int epoch, Logs& logs) {
  if (every_ == 0) save(epoch, -1, logs);
}

bool ModelCheckpointImpl::should_save_on_batch(int batch) {
  if (every_ == 0) return false;
  // A batch index not above the last one seen means a new epoch began (as Keras counts).
  batches_since_save_ += batch <= last_batch_seen_ ? batch + 1 : batch - last_batch_seen_;
  last_batch_seen_ = batch;
  if (batches_since_save_ < every_) return false;
  batches_since_save_ = 0;
  return true;
}

std::string ModelCheckpointImpl::file_path(int epoch, int batch, const Logs& logs) const {
  std::map<std::string, FormatValue> values;
  for (const auto& [k, v] : logs.items()) values[k] = v;
  values["epoch"] = static_cast<int64_t>(epoch + 1);
  if (batch >= 0 && !logs.has("batch")) values["batch"] = static_cast<int64_t>(batch + 1);
  return format_python(std::string(kWhere) + " filepath", options_.filepath, values);
}

void ModelCheckpointImpl::save(int epoch, int batch, const Logs& logs) {
  Model* m = model();
  if (!m) fail<StateError>(kWhere, "a model", "none", "Use the callback inside fit().");
  std::string path = file_path(epoch, batch, logs);
  if (options_.save_best_only) {
    std::optional<double> current = logs.get(options_.monitor);
    if (!current) {
      warn(kWhere, "can save best model only with " + options_.monitor + " available, skipping.");
      return;
    }
    if (!direction_) {
      direction_ = resolve_direction(kWhere, options_.mode, options_.monitor, m);
      if (!direction_)
        fail<ValueError>(std::string(kWhere) + "(monitor='" + options_.monitor + "')",
                         "a metric whose direction (min or max) is known", "no declared direction",
                         "Pass mode=\"min\" or mode=\"max\".");
      best_ = options_.initial_value_threshold.value_or(worst_value(*direction_));
    }
    if (!is_improvement(*direction_, *current, best_, 0.0)) {
      if (options_.verbose > 0)
        std::cout << "\nEpoch " << epoch + 1 << ": " << options_.monitor << " did not improve from " << best_ << std::endl;
      return;
    }
    if (options_.verbose > 0)
      std::cout << "\nEpoch " << epoch + 1 << ": " << options_.monitor << " improved from " << best_ << " to "
                << *current << ", saving model to " << path << std::endl;
    best_ = *current;
  } else if (options_.verbose > 0) {
    std::cout << "\nEpoch " << epoch + 1 << ": saving model to " << path << std::endl;
  }
  fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path());
  if (fs::is_directory(target))
    fail<IOError>(std::string(kWhere) + " '" + path + "'", "a file path", "a directory",
                  "Give filepath a file name, such as \"ckpt-{epoch:02d}.keras\".");
  // The saver writes a temporary sibling that keeps the extension, then it replaces the target.
  fs::path tmp = target.parent_path() / (".tmp" + std::to_string(::getpid()) + "-" + target.filename().string());
  try {
    (options_.save_weights_only ? options_.save_weights : options_.save_model)(*m, tmp.string());
    fs::rename(tmp, target);
  } catch (const fs::filesystem_error& e) {
    std::error_code ec;
    fs::remove(tmp, ec);
    fail<IOError>(std::string(kWhere) + " '" + path + "'", "the checkpoint written", e.what());
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
  last_saved_ = path;
}

std::shared_ptr<ModelCheckpointImpl> ModelCheckpoint(ModelCheckpointOptions options) {
  return std::make_shared<ModelCheckpointImpl>(std::move(options));
}

}  // namespace keras::callbacks
