#include "callbacks/tensorboard.h"

#include <cstdio>
#include <filesystem>
#include <utility>
#include <vector>

#include "backend/errors.h"
#include "keras/models/model.h"
#include "keras/profiler/profiler.h"
#include "optimizers/optimizer.h"

namespace keras::callbacks {

UpdateFreq::UpdateFreq(const std::string& s) {
  if (s == "epoch")
    batches_ = 0;
  else if (s == "batch")
    batches_ = 1;
  else
    fail<ValueError>("TensorBoard update_freq", "\"epoch\", \"batch\" or a number of batches >= 1", "\"" + s + "\"");
}

UpdateFreq::UpdateFreq(int batches) : batches_(batches) {
  if (batches < 1)
    fail<ValueError>("TensorBoard update_freq", "\"epoch\", \"batch\" or a number of batches >= 1",
                     std::to_string(batches));
}

namespace {
[[noreturn]] void bad_profile_batch(const std::string& got) {
  fail<ValueError>("TensorBoard profile_batch",
                   "a non-negative integer or a pair (start, stop) of positive integers with start <= stop", got,
                   "A pair profiles batches start..stop; 0 disables profiling.");
}
}  // namespace

ProfileBatch::ProfileBatch(int batch) : start_(batch), stop_(batch) {
  if (batch < 0) bad_profile_batch(std::to_string(batch));
}

ProfileBatch::ProfileBatch(int start, int stop) : start_(start), stop_(stop) {
  if (start < 1 || stop < start) bad_profile_batch("(" + std::to_string(start) + ", " + std::to_string(stop) + ")");
}

ProfileBatch::ProfileBatch(const char* text) {
  const std::string s = text ? text : "";
  int a = 0, b = 0, used = 0;
  if (std::sscanf(s.c_str(), "%d,%d%n", &a, &b, &used) == 2 && used == static_cast<int>(s.size()))
    *this = ProfileBatch(a, b);
  else if (std::sscanf(s.c_str(), "%d%n", &a, &used) == 1 && used == static_cast<int>(s.size()))
    *this = ProfileBatch(a);
  else
    bad_profile_batch("\"" + s + "\"");
}

TensorBoardImpl::TensorBoardImpl(TensorBoardOptions options) : options_(std::move(options)) {
  if (options_.histogram_freq < 0)
    fail<ValueError>("TensorBoard", "histogram_freq >= 0", std::to_string(options_.histogram_freq),
                     "0 disables weight histograms.");
  if (options_.log_dir.empty()) fail<ValueError>("TensorBoard", "a non-empty log_dir", "\"\"");
}

std::string TensorBoardImpl::train_event_file() const { return train_path_; }
std::string TensorBoardImpl::validation_event_file() const { return val_path_; }

// Writers open on first use, so a fit without validation data leaves no validation run.
tfevents::EventFileWriter& TensorBoardImpl::train_writer() {
  if (!train_) {
    train_ = std::make_unique<tfevents::EventFileWriter>((std::filesystem::path(options_.log_dir) / "train").string());
    train_path_ = train_->path();
  }
  return *train_;
}

tfevents::EventFileWriter& TensorBoardImpl::val_writer() {
  if (!val_) {
    val_ = std::make_unique<tfevents::EventFileWriter>(
        (std::filesystem::path(options_.log_dir) / "validation").string());
    val_path_ = val_->path();
  }
  return *val_;
}

void TensorBoardImpl::close_writers() {
  // Reset before closing so a failing close cannot leave a half-closed writer in place.
  auto train = std::move(train_);
  auto val = std::move(val_);
  if (train) train->close();
  if (val) val->close();
}

void TensorBoardImpl::on_train_begin(const Logs&) {
  close_writers();  // a new fit starts new files, as Keras's writers do after on_train_end
  global_train_batch_ = 0;
  train_writer();
}

void TensorBoardImpl::on_train_end(const Logs&) {
  if (tracing_) stop_trace();  // the fit ended before `stop`
  close_writers();
}

void TensorBoardImpl::on_train_batch_begin(int, const Logs&) {
  ++global_train_batch_;
  const ProfileBatch& p = options_.profile_batch;
  if (!p.enabled() || global_train_batch_ != p.start()) return;
  // As Keras: a profile someone else runs is left alone (and not stopped here).
  if (profiler::running()) {
    std::fprintf(stderr, "TensorBoard: profile_batch: a profile is already running; batches %d-%d are not profiled "
                 "separately.\n", p.start(), p.stop());
    return;
  }
  profiler::start((std::filesystem::path(options_.log_dir) / "train").string());
  tracing_ = true;
}

void TensorBoardImpl::stop_trace() {
  tracing_ = false;
  profile_path_ = profiler::stop();
}

void TensorBoardImpl::on_train_batch_end(int, const Logs& logs) {
  const int64_t every = options_.update_freq.batches();
  if (every != 0 && global_train_batch_ % every == 0) {
    auto& w = train_writer();
    for (const auto& [name, value] : logs.items()) w.add_scalar("batch_" + name, value, global_train_batch_);
  }
  if (tracing_ && global_train_batch_ >= options_.profile_batch.stop()) stop_trace();
}

void TensorBoardImpl::on_test_end(const Logs& logs) {
  if (!model_ || !model_->compiled() || !model_->optimizer() || logs.empty()) return;
  const int64_t step = model_->optimizer()->iterations();
  auto& w = val_writer();
  for (const auto& [name, value] : logs.items()) w.add_scalar("evaluation_" + name + "_vs_iterations", value, step);
  w.flush();
}

void TensorBoardImpl::on_epoch_end(int epoch, Logs& logs) {
  std::vector<std::pair<std::string, double>> train_logs, val_logs;
  for (const auto& [name, value] : logs.items()) {
    if (name.rfind("val_", 0) == 0)
      val_logs.emplace_back(name.substr(4), value);
    else if (name != "learning_rate")  // the optimizer's own rate is written below, as Keras
      train_logs.emplace_back(name, value);
  }
  if (model_ && model_->compiled() && model_->optimizer())
    train_logs.emplace_back("learning_rate", model_->optimizer()->learning_rate());
  else if (auto lr = logs.get("learning_rate"))
    train_logs.emplace_back("learning_rate", *lr);

  if (!train_logs.empty()) {
    auto& w = train_writer();
    for (const auto& [name, value] : train_logs) w.add_scalar("epoch_" + name, value, epoch);
  }
  if (!val_logs.empty()) {
    auto& w = val_writer();
    for (const auto& [name, value] : val_logs) w.add_scalar("epoch_" + name, value, epoch);
    w.flush();
  }
  if (options_.histogram_freq > 0 && epoch % options_.histogram_freq == 0) log_weights(epoch);
  if (train_) train_->flush();
}

void TensorBoardImpl::log_weights(int epoch) {
  if (!model_) return;
  auto& w = train_writer();
  for (const Variable& v : model_->weights()) {
    std::string tag = v.path();
    for (char& c : tag)
      if (c == ':') c = '_';
    w.add_histogram(tag + "/histogram", v.value().to_vector<double>(), epoch);
  }
}

std::shared_ptr<TensorBoardImpl> TensorBoard(TensorBoardOptions options) {
  return std::make_shared<TensorBoardImpl>(std::move(options));
}

}  // namespace keras::callbacks
