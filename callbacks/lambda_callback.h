// LambdaCallback (keras.callbacks.LambdaCallback): a callback made of plain functions; hooks
// left empty do nothing.
//
//   auto cb = keras::callbacks::LambdaCallback(
//       {.on_epoch_end = [](int epoch, keras::Logs& logs) { std::cout << logs.at("loss"); }});
#pragma once
#include <functional>
#include <memory>

#include "keras/models/callback.h"

namespace keras::callbacks {

struct LambdaCallbackOptions {
  using LogsFn = std::function<void(const Logs&)>;
  using IndexFn = std::function<void(int, const Logs&)>;
  LogsFn on_train_begin, on_train_end;
  IndexFn on_epoch_begin;
  std::function<void(int, Logs&)> on_epoch_end;  // may add entries, as any epoch-end hook
  IndexFn on_train_batch_begin, on_train_batch_end;
  LogsFn on_test_begin, on_test_end;
  IndexFn on_test_batch_begin, on_test_batch_end;
  LogsFn on_predict_begin, on_predict_end;
  IndexFn on_predict_batch_begin, on_predict_batch_end;
};

class LambdaCallbackImpl : public Callback {
 public:
  explicit LambdaCallbackImpl(LambdaCallbackOptions options) : f_(std::move(options)) {}
  void on_train_begin(const Logs& l) override { if (f_.on_train_begin) f_.on_train_begin(l); }
  void on_train_end(const Logs& l) override { if (f_.on_train_end) f_.on_train_end(l); }
  void on_epoch_begin(int e, const Logs& l) override { if (f_.on_epoch_begin) f_.on_epoch_begin(e, l); }
  void on_epoch_end(int e, Logs& l) override { if (f_.on_epoch_end) f_.on_epoch_end(e, l); }
  void on_train_batch_begin(int b, const Logs& l) override { if (f_.on_train_batch_begin) f_.on_train_batch_begin(b, l); }
  void on_train_batch_end(int b, const Logs& l) override { if (f_.on_train_batch_end) f_.on_train_batch_end(b, l); }
  void on_test_begin(const Logs& l) override { if (f_.on_test_begin) f_.on_test_begin(l); }
  void on_test_end(const Logs& l) override { if (f_.on_test_end) f_.on_test_end(l); }
  void on_test_batch_begin(int b, const Logs& l) override { if (f_.on_test_batch_begin) f_.on_test_batch_begin(b, l); }
  void on_test_batch_end(int b, const Logs& l) override { if (f_.on_test_batch_end) f_.on_test_batch_end(b, l); }
  void on_predict_begin(const Logs& l) override { if (f_.on_predict_begin) f_.on_predict_begin(l); }
  void on_predict_end(const Logs& l) override { if (f_.on_predict_end) f_.on_predict_end(l); }
  void on_predict_batch_begin(int b, const Logs& l) override {
    if (f_.on_predict_batch_begin) f_.on_predict_batch_begin(b, l);
  }
  void on_predict_batch_end(int b, const Logs& l) override {
    if (f_.on_predict_batch_end) f_.on_predict_batch_end(b, l);
  }

 private:
  LambdaCallbackOptions f_;
};

inline std::shared_ptr<LambdaCallbackImpl> LambdaCallback(LambdaCallbackOptions options) {
  return std::make_shared<LambdaCallbackImpl>(std::move(options));
}

}  // namespace keras::callbacks
