#include "keras/models/callback.h"

#include "backend/errors.h"
#include "keras/profiler/profiler.h"

namespace keras {

void Logs::set(const std::string& key, double value) {
  for (auto& [k, v] : items_)
    if (k == key) {
      v = value;
      return;
    }
  items_.emplace_back(key, value);
}

bool Logs::has(const std::string& key) const { return get(key).has_value(); }

std::optional<double> Logs::get(const std::string& key) const {
  for (const auto& [k, v] : items_)
    if (k == key) return v;
  return std::nullopt;
}

double Logs::at(const std::string& key) const {
  if (auto v = get(key)) return *v;
  std::string known;
  for (const auto& [k, v] : items_) known += (known.empty() ? "" : ", ") + k;
  fail<ValueError>("Logs", "one of the keys [" + known + "]", "'" + key + "'");
}

#define KERAS_FAN_OUT(call) \
  for (auto& cb : callbacks_) cb->call

// The hooks: each callback's time is a span of a running profile ("ModelCheckpoint.on_epoch_end").
#define KERAS_FAN_OUT_TIMED(hook, args)                   \
  for (auto& cb : callbacks_) {                           \
    profiler::CallbackSpan span(typeid(*cb), #hook);      \
    cb->hook args;                                        \
  }

void CallbackList::set_model(Model* model) {
  Callback::set_model(model);
  KERAS_FAN_OUT(set_model(model));
}
void CallbackList::set_params(const std::map<std::string, double>& params) {
  Callback::set_params(params);
  KERAS_FAN_OUT(set_params(params));
}
void CallbackList::on_train_begin(const Logs& l) { KERAS_FAN_OUT_TIMED(on_train_begin, (l)); }
void CallbackList::on_train_end(const Logs& l) { KERAS_FAN_OUT_TIMED(on_train_end, (l)); }
void CallbackList::on_epoch_begin(int e, const Logs& l) { KERAS_FAN_OUT_TIMED(on_epoch_begin, (e, l)); }
void CallbackList::on_epoch_end(int e, Logs& l) { KERAS_FAN_OUT_TIMED(on_epoch_end, (e, l)); }
void CallbackList::on_train_batch_begin(int b, const Logs& l) { KERAS_FAN_OUT_TIMED(on_train_batch_begin, (b, l)); }
void CallbackList::on_train_batch_end(int b, const Logs& l) { KERAS_FAN_OUT_TIMED(on_train_batch_end, (b, l)); }
void CallbackList::on_test_begin(const Logs& l) { KERAS_FAN_OUT_TIMED(on_test_begin, (l)); }
void CallbackList::on_test_end(const Logs& l) { KERAS_FAN_OUT_TIMED(on_test_end, (l)); }
void CallbackList::on_test_batch_begin(int b, const Logs& l) { KERAS_FAN_OUT_TIMED(on_test_batch_begin, (b, l)); }
void CallbackList::on_test_batch_end(int b, const Logs& l) { KERAS_FAN_OUT_TIMED(on_test_batch_end, (b, l)); }
void CallbackList::on_predict_begin(const Logs& l) { KERAS_FAN_OUT_TIMED(on_predict_begin, (l)); }
void CallbackList::on_predict_end(const Logs& l) { KERAS_FAN_OUT_TIMED(on_predict_end, (l)); }
void CallbackList::on_predict_batch_begin(int b, const Logs& l) { KERAS_FAN_OUT_TIMED(on_predict_batch_begin, (b, l)); }
void CallbackList::on_predict_batch_end(int b, const Logs& l) { KERAS_FAN_OUT_TIMED(on_predict_batch_end, (b, l)); }
#undef KERAS_FAN_OUT
#undef KERAS_FAN_OUT_TIMED

void History::on_train_begin(const Logs&) {
  history_.clear();
  epochs_.clear();
}

void History::on_epoch_end(int epoch, Logs& logs) {
  epochs_.push_back(epoch);
  for (const auto& [k, v] : logs.items()) history_[k].push_back(v);
}

const std::vector<double>& History::operator[](const std::string& key) const {
  auto it = history_.find(key);
  if (it == history_.end()) {
    std::string known;
    for (const auto& [k, v] : history_) known += (known.empty() ? "" : ", ") + k;
    fail<ValueError>("History", "one of the keys [" + known + "]", "'" + key + "'");
  }
  return it->second;
}

void CallbackList::drop_chief_only() {
  std::erase_if(callbacks_, [](const CallbackPtr& cb) { return cb && cb->chief_only(); });
}

}  // namespace keras
