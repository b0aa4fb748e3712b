// ProgbarLogger: Keras's progress output for fit / evaluate / predict.
//   verbose 1: "Epoch 1/5" then a live bar "422/422 ━━━━━━━━━━━━━━━━━━━━ 3s 7ms/step - loss: 0.61"
//              (redrawn in place on a terminal; on a pipe or file, one final line per epoch);
//   verbose 2: one line per epoch "422/422 - 3s - 7ms/step - loss: 0.61 - val_loss: 0.43".
#pragma once
#include <chrono>
#include <cstdio>

#include "keras/models/callback.h"

namespace keras {

class ProgbarLogger : public Callback {
 public:
  bool chief_only() const override { return true; }
  // `out` defaults to stdout; `interactive` to whether `out` is a terminal.
  explicit ProgbarLogger(int verbose = 1, std::FILE* out = stdout, int interactive = -1);

  void on_train_begin(const Logs& logs) override;
  void on_train_end(const Logs& logs) override { in_fit_ = false; }
  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_train_batch_end(int batch, const Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_test_begin(const Logs& logs) override;
  void on_test_batch_end(int batch, const Logs& logs) override;
  void on_test_end(const Logs& logs) override;
  void on_predict_begin(const Logs& logs) override;
  void on_predict_batch_end(int batch, const Logs& logs) override;
  void on_predict_end(const Logs& logs) override;

 private:
  void start(int64_t target);
  void update(int64_t current, const Logs& logs, bool finalize);
  int verbose_;
  std::FILE* out_;
  bool interactive_;
  bool in_fit_ = false;
  int64_t target_ = 0;
  int64_t seen_ = 0;
  std::chrono::steady_clock::time_point start_, last_draw_;
  size_t last_width_ = 0;
};

}  // namespace keras
