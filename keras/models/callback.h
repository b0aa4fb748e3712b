// Callback: hooks into fit / evaluate / predict (keras.callbacks.Callback), the CallbackList
// that fans a hook out to many, Logs, and History (which fit always installs and returns).
// The built-in callbacks beyond these live in callbacks/.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace keras {

class Model;

// Ordered name -> value map of the figures of a batch or an epoch ("loss", "accuracy",
// "val_loss", ...), in the order they were first set.
class Logs {
 public:
  void set(const std::string& key, double value);
  bool has(const std::string& key) const;
  // Throws ValueError naming the key and listing the available ones.
  double at(const std::string& key) const;
  std::optional<double> get(const std::string& key) const;
  const std::vector<std::pair<std::string, double>>& items() const { return items_; }
  bool empty() const { return items_.empty(); }
  void clear() { items_.clear(); }

 private:
  std::vector<std::pair<std::string, double>> items_;
};

class Callback {
 public:
  virtual ~Callback() = default;
  // Called by fit/evaluate/predict before any hook; `params` carry epochs, steps, verbose.
  virtual void set_model(Model* model) { model_ = model; }
  virtual void set_params(const std::map<std::string, double>& params) { params_ = params; }
  Model* model() const { return model_; }
  const std::map<std::string, double>& params() const { return params_; }

  virtual void on_train_begin(const Logs& logs) {}
  virtual void on_train_end(const Logs& logs) {}
  virtual void on_epoch_begin(int epoch, const Logs& logs) {}
  virtual void on_epoch_end(int epoch, Logs& logs) {}  // may add entries (e.g. learning_rate)
  virtual void on_train_batch_begin(int batch, const Logs& logs) {}
  virtual void on_train_batch_end(int batch, const Logs& logs) {}
  virtual void on_test_begin(const Logs& logs) {}
  virtual void on_test_end(const Logs& logs) {}
  virtual void on_test_batch_begin(int batch, const Logs& logs) {}
  virtual void on_test_batch_end(int batch, const Logs& logs) {}
  virtual void on_predict_begin(const Logs& logs) {}
  virtual void on_predict_end(const Logs& logs) {}
  virtual void on_predict_batch_begin(int batch, const Logs& logs) {}
  virtual void on_predict_batch_end(int batch, const Logs& logs) {}

  // True for callbacks that write files or print (progress bar, checkpoints, logs): under
  // data-parallel training they run on process 0 only.
  virtual bool chief_only() const { return false; }

 protected:
  Model* model_ = nullptr;
  std::map<std::string, double> params_;
};
using CallbackPtr = std::shared_ptr<Callback>;

// Calls each hook on every callback, in order.
class CallbackList : public Callback {
 public:
  explicit CallbackList(std::vector<CallbackPtr> callbacks = {}) : callbacks_(std::move(callbacks)) {}
  void add(CallbackPtr cb) { callbacks_.push_back(std::move(cb)); }
  // Removes the chief_only() callbacks (on the processes other than 0).
  void drop_chief_only();
  const std::vector<CallbackPtr>& callbacks() const { return callbacks_; }

  void set_model(Model* model) override;
  void set_params(const std::map<std::string, double>& params) override;
  void on_train_begin(const Logs& logs) override;
  void on_train_end(const Logs& logs) override;
  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_train_batch_begin(int batch, const Logs& logs) override;
  void on_train_batch_end(int batch, const Logs& logs) override;
  void on_test_begin(const Logs& logs) override;
  void on_test_end(const Logs& logs) override;
  void on_test_batch_begin(int batch, const Logs& logs) override;
  void on_test_batch_end(int batch, const Logs& logs) override;
  void on_predict_begin(const Logs& logs) override;
  void on_predict_end(const Logs& logs) override;
  void on_predict_batch_begin(int batch, const Logs& logs) override;
  void on_predict_batch_end(int batch, const Logs& logs) override;

 private:
  std::vector<CallbackPtr> callbacks_;
};

// Records every epoch's logs: history["loss"][epoch].
class History : public Callback {
 public:
  void on_train_begin(const Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  const std::map<std::string, std::vector<double>>& history() const { return history_; }
  const std::vector<int>& epochs() const { return epochs_; }
  // history()[key]; ValueError naming the key when absent.
  const std::vector<double>& operator[](const std::string& key) const;

 private:
  std::map<std::string, std::vector<double>> history_;
  std::vector<int> epochs_;
};

}  // namespace keras
