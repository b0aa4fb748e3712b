#include "callbacks/csv_logger.h"

#include <algorithm>
#include <filesystem>

#include "backend/errors.h"
#include "callbacks/py_format.h"

namespace keras::callbacks {

namespace {
const char* kWhere = "CSVLogger";
}

CSVLoggerImpl::CSVLoggerImpl(const CSVLoggerOptions& options) : options_(options) {
  if (options_.filename.empty()) fail<ValueError>(kWhere, "a filename", "an empty one");
  if (options_.separator.empty()) fail<ValueError>(kWhere, "a separator", "an empty one");
}

void CSVLoggerImpl::on_train_begin(const Logs&) {
  if (file_.is_open()) file_.close();
  header_done_ = false;
  write_header_ = true;
  auto mode = std::ios::binary | std::ios::out;
  if (options_.append) {
    std::ifstream in(options_.filename, std::ios::binary);
    // Header only when the file is new or its first line is empty (as Keras).
    if (in) write_header_ = in.peek() == std::ifstream::traits_type::eof() || in.peek() == '\n' || in.peek() == '\r';
    mode |= std::ios::app;
  } else {
    mode |= std::ios::trunc;
  }
  file_.open(options_.filename, mode);
  if (!file_)
    fail<IOError>(std::string(kWhere) + " '" + options_.filename + "'", "a writable file", "a file that cannot be opened",
                  "Check that the directory exists and is writable.");
}

void CSVLoggerImpl::write_row(const std::vector<std::string>& fields) {
  const std::string& sep = options_.separator;
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) {
    const std::string& f = fields[i];
    if (i) line += sep;
    bool quote = f.find(sep) != std::string::npos || f.find_first_of("\"\r\n") != std::string::npos;
    if (!quote) {
      line += f;
      continue;
    }
    line += '"';
    for (char c : f) line += c == '"' ? std::string("\"\"") : std::string(1, c);
    line += '"';
  }
  line += "\r\n";
  file_ << line;
  file_.flush();
  if (!file_) fail<IOError>(std::string(kWhere) + " '" + options_.filename + "'", "a row written", "a write error");
}

void CSVLoggerImpl::on_epoch_end(int epoch, Logs& logs) {
  if (!file_.is_open()) on_train_begin({});
  if (!keys_set_) {
    for (const auto& [k, v] : logs.items()) keys_.push_back(k);
    std::sort(keys_.begin(), keys_.end());
    bool has_val = std::any_of(keys_.begin(), keys_.end(), [](const std::string& k) { return k.rfind("val_", 0) == 0; });
    if (!has_val) {
      size_t n = keys_.size();
      for (size_t i = 0; i < n; ++i) keys_.push_back("val_" + keys_[i]);
    }
    keys_set_ = true;
  }
  if (!header_done_) {
    if (write_header_) {
      std::vector<std::string> header{"epoch"};
      header.insert(header.end(), keys_.begin(), keys_.end());
      write_row(header);
    }
    header_done_ = true;
  }
  std::vector<std::string> row{std::to_string(epoch)};
  for (const auto& k : keys_) {
    auto v = logs.get(k);
    row.push_back(v ? python_float_repr(*v) : "NA");
  }
  write_row(row);
}

void CSVLoggerImpl::on_train_end(const Logs&) {
  if (file_.is_open()) file_.close();
  header_done_ = false;
}

std::shared_ptr<CSVLoggerImpl> CSVLogger(const CSVLoggerOptions& options) {
  return std::make_shared<CSVLoggerImpl>(options);
}

std::shared_ptr<CSVLoggerImpl> CSVLogger(const std::string& filename, const std::string& separator, bool append) {
  return CSVLogger(CSVLoggerOptions{filename, separator, append});
}

}  // namespace keras::callbacks
