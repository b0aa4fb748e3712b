// CSVLogger (keras.callbacks.CSVLogger): one row per epoch, in the file format Keras writes
// (Python's csv module, excel dialect):
//   - header "epoch" + the first epoch's log keys sorted; when none starts with "val_", a
//     "val_" copy of every key is added (validation may start later) and filled "NA";
//   - the epoch column is 0-based; floats as Python's str(float); "\r\n" line ends; fields
//     holding the separator, a quote or a line break are quoted ("" inside);
//   - append=true appends, writing the header only when the file is new or empty.
#pragma once
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "keras/models/callback.h"

namespace keras::callbacks {

struct CSVLoggerOptions {
  std::string filename;
  std::string separator = ",";
  bool append = false;
};

class CSVLoggerImpl : public Callback {
 public:
  bool chief_only() const override { return true; }
  // Throws ValueError for an empty filename or separator.
  explicit CSVLoggerImpl(const CSVLoggerOptions& options);
  // Opens the file; IOError naming it when that fails.
  void on_train_begin(const Logs& logs) override;
  // IOError naming the file when a row cannot be written.
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_train_end(const Logs& logs) override;

  // The columns after "epoch", fixed by the first epoch seen (empty before).
  const std::vector<std::string>& keys() const { return keys_; }

 private:
  void write_row(const std::vector<std::string>& fields);
  CSVLoggerOptions options_;
  std::ofstream file_;
  bool write_header_ = true;
  bool header_done_ = false;
  bool keys_set_ = false;
  std::vector<std::string> keys_;
};

std::shared_ptr<CSVLoggerImpl> CSVLogger(const CSVLoggerOptions& options);
// Shorthand: CSVLogger("log.csv").
std::shared_ptr<CSVLoggerImpl> CSVLogger(const std::string& filename, const std::string& separator = ",",
                                         bool append = false);

}  // namespace keras::callbacks
