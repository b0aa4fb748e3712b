#include "keras/debugging/tensor_dump.h"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "backend/instrumentation.h"
#include "keras/data/readers.h"
#include "keras/utils/file_util.h"

namespace keras::debugging {
namespace fs = std::filesystem;
using instrumentation::StepInfo;

namespace {

// "train_e0_s3", "test_s2", "eager" (outside Model's loops).
std::string step_dir(const StepInfo& s) {
  std::string d = s.mode.empty() ? "eager" : s.mode;
  if (s.epoch >= 0) d += "_e" + std::to_string(s.epoch);
  if (s.step >= 0) d += "_s" + std::to_string(s.step);
  return d;
}

// A layer path as one file name: "model/block_3/conv" -> "model.block_3.conv".
std::string file_stem(const std::string& path) {
  std::string out = path;
  for (char& c : out)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) c = c == '/' ? '.' : '_';
  return out;
}

// A pattern matches the whole path or any tail of it that starts at a path component
// ("block_3/*" matches "model/block_3/conv"; "conv*" matches "model/block_3/conv").
bool path_matches(const std::string& pattern, const std::string& path) {
  if (fnmatch(pattern.c_str(), path.c_str(), 0) == 0) return true;
  for (size_t at = path.find('/'); at != std::string::npos; at = path.find('/', at + 1))
    if (fnmatch(pattern.c_str(), path.c_str() + at + 1, 0) == 0) return true;
  return false;
}

template <class T>
bool selected(const std::vector<T>& choice, const T& v) {
  return choice.empty() || std::find(choice.begin(), choice.end(), v) != choice.end();
}

}  // namespace

struct TensorDump::State : instrumentation::Observer, std::enable_shared_from_this<TensorDump::State> {
  DumpOptions options;
  mutable std::mutex mutex;
  bool closed = false;
  bool truncated = false;
  nlohmann::ordered_json entries = nlohmann::ordered_json::array();  // in the order written
  std::string current_dir;                    // step folder of the last write, to flush on change
  std::map<std::string, int> calls;           // "<step dir>|<layer>" -> calls seen
  std::string calls_dir;

  bool step_chosen(const StepInfo& s) const {
    return selected(options.modes, s.mode) && selected(options.epochs, s.epoch) && selected(options.steps, s.step);
  }
  bool layer_chosen(const std::string& path) const {
    if (options.layers.empty()) return true;
    return std::any_of(options.layers.begin(), options.layers.end(),
                       [&](const std::string& p) { return path_matches(p, path); });
  }

  void write_index_locked() const {
    nlohmann::ordered_json doc = {{"format", "keras-tensor-dump"}, {"version", 1}, {"truncated", truncated},
                                  {"tensors", entries}};
    write_file_atomic((fs::path(options.dump_root) / "index.json").string(), doc.dump(1) + "\n");
  }

  void write(const std::string& layer, const std::string& class_name, const std::string& kind, size_t index,
             int call, const StepInfo& s, const Tensor& t) {
    std::lock_guard lock(mutex);
    if (closed) return;
    if (static_cast<int64_t>(entries.size()) >= options.max_tensors) {
      truncated = true;
      return;
    }
    const std::string dir = step_dir(s);
    if (!current_dir.empty() && dir != current_dir) write_index_locked();  // a step is complete
    current_dir = dir;
    std::string file = dir + "/" + file_stem(layer) + "." + kind + "_" + std::to_string(index);
    if (call > 0) file += ".call_" + std::to_string(call);
    file += ".npy";
    std::error_code ec;
    fs::create_directories(fs::path(options.dump_root) / dir, ec);
    if (ec)
      fail<IOError>("TensorDump '" + options.dump_root + "'", "a writable folder " + dir, ec.message());
    data::save_npy((fs::path(options.dump_root) / file).string(), t);
    std::string name = layer + "/" + kind + ":" + std::to_string(index);
    if (call > 0) name += "#" + std::to_string(call);
    entries.push_back({{"name", name},
                       {"layer", layer},
                       {"class_name", class_name},
                       {"kind", kind},
                       {"index", index},
                       {"call", call},
                       {"mode", s.mode},
                       {"epoch", s.epoch},
                       {"step", s.step},
                       {"shape", t.shape()},
                       {"dtype", dtype_name(t.dtype())},
                       {"file", file}});
  }

  void layer_end(const std::string& path, const std::string& class_name, const TensorList& outputs) override {
    const StepInfo s = instrumentation::step();
    if (!step_chosen(s) || !layer_chosen(path)) return;
    int call;
    {
      std::lock_guard lock(mutex);
      if (closed) return;
      const std::string dir = step_dir(s);
      if (dir != calls_dir) calls.clear(), calls_dir = dir;
      call = calls[path]++;
    }
    for (size_t k = 0; k < outputs.size(); ++k) {
      const Tensor& out = outputs[k];
      if (!out.defined()) continue;
      if (options.outputs) write(path, class_name, "output", k, call, s, out);
      if (options.gradients && is_floating(out.dtype())) {
        std::weak_ptr<State> self = weak_from_this();
        instrumentation::on_gradient(out, [self, path, class_name, k, call, s](const Tensor& g) {
          if (auto st = self.lock()) st->write(path, class_name, "gradient", k, call, s, g);
        });
      }
    }
  }
};

TensorDump::TensorDump(DumpOptions options) : state_(std::make_shared<State>()) {
  if (options.dump_root.empty())
    fail<ValueError>("TensorDump", "a dump_root folder", "an empty path", "Set DumpOptions::dump_root.");
  std::error_code ec;
  fs::create_directories(options.dump_root, ec);
  if (ec) fail<IOError>("TensorDump '" + options.dump_root + "'", "a folder it can create", ec.message());
  state_->options = std::move(options);
  {
    std::lock_guard lock(state_->mutex);
    state_->write_index_locked();  // an empty index at once: the folder reads as a dump from the start
  }
  instrumentation::attach(state_);
}

TensorDump::~TensorDump() {
  try {
    close();
  } catch (...) {  // a destructor must not throw; close() explicitly to see write errors
  }
}

void TensorDump::close() {
  if (!state_) return;
  instrumentation::detach(state_.get());
  std::lock_guard lock(state_->mutex);
  if (state_->closed) return;
  state_->closed = true;
  state_->write_index_locked();
}

int64_t TensorDump::size() const {
  std::lock_guard lock(state_->mutex);
  return static_cast<int64_t>(state_->entries.size());
}

std::string TensorDump::index_path() const { return (fs::path(state_->options.dump_root) / "index.json").string(); }

TensorDump dump(DumpOptions options) { return TensorDump(std::move(options)); }

void DumpTensorsCallback::begin(const char* owner) {
  if (dump_) return;  // fit's validation runs inside fit's dump
  dump_ = std::make_unique<TensorDump>(options_);
  owner_ = owner;
}

void DumpTensorsCallback::end(const char* owner) {
  if (!dump_ || owner_ != owner) return;
  dump_->close();
  dump_.reset();
}

void DumpTensorsCallback::on_train_begin(const Logs&) { begin("train"); }
void DumpTensorsCallback::on_train_end(const Logs&) { end("train"); }
void DumpTensorsCallback::on_test_begin(const Logs&) { begin("test"); }
void DumpTensorsCallback::on_test_end(const Logs&) { end("test"); }
void DumpTensorsCallback::on_predict_begin(const Logs&) { begin("predict"); }
void DumpTensorsCallback::on_predict_end(const Logs&) { end("predict"); }

std::shared_ptr<DumpTensorsCallback> DumpTensors(DumpOptions options) {
  return std::make_shared<DumpTensorsCallback>(std::move(options));
}

}  // namespace keras::debugging
