#include "keras/models/progbar.h"

#include <unistd.h>

#include <cmath>
#include <string>

namespace keras {

namespace {
std::string format_duration(double seconds) {
  char buf[32];
  if (seconds >= 3600) std::snprintf(buf, sizeof buf, "%d:%02d:%02d", int(seconds) / 3600, int(seconds) / 60 % 60, int(seconds) % 60);
  else if (seconds >= 60) std::snprintf(buf, sizeof buf, "%d:%02d", int(seconds) / 60, int(seconds) % 60);
  else std::snprintf(buf, sizeof buf, "%ds", int(std::lround(seconds)));
  return buf;
}

std::string format_per_step(double seconds) {
  char buf[32];
  if (seconds >= 1) std::snprintf(buf, sizeof buf, "%.0fs/step", seconds);
  else if (seconds >= 1e-3) std::snprintf(buf, sizeof buf, "%.0fms/step", seconds * 1e3);
  else std::snprintf(buf, sizeof buf, "%.0fus/step", seconds * 1e6);
  return buf;
}

std::string format_logs(const Logs& logs) {
  std::string s;
  char buf[64];
  for (const auto& [k, v] : logs.items()) {
    if (std::abs(v) >= 1e-3 || v == 0) std::snprintf(buf, sizeof buf, " - %s: %.4f", k.c_str(), v);
    else std::snprintf(buf, sizeof buf, " - %s: %.4e", k.c_str(), v);
    s += buf;
  }
  return s;
}
}  // namespace

ProgbarLogger::ProgbarLogger(int verbose, std::FILE* out, int interactive)
    : verbose_(verbose), out_(out), interactive_(interactive < 0 ? isatty(fileno(out)) != 0 : interactive != 0) {}

void ProgbarLogger::start(int64_t target) {
  target_ = target;
  seen_ = 0;
  start_ = last_draw_ = std::chrono::steady_clock::now();
  last_width_ = 0;
}

void ProgbarLogger::update(int64_t current, const Logs& logs, bool finalize) {
  if (verbose_ == 0) return;
  auto now = std::chrono::steady_clock::now();
  double elapsed = std::chrono::duration<double>(now - start_).count();
  double per_step = current > 0 ? elapsed / static_cast<double>(current) : 0;
  std::string digits = std::to_string(target_);
  char head[64];
  std::snprintf(head, sizeof head, "%*lld/%s", static_cast<int>(digits.size()), static_cast<long long>(current), digits.c_str());
  if (verbose_ == 2 || !interactive_) {
    if (!finalize) return;
    std::string line = std::string(head) + " - " + format_duration(elapsed) + " - " + format_per_step(per_step) + format_logs(logs);
    std::fprintf(out_, "%s\n", line.c_str());
    std::fflush(out_);
    return;
  }
  // Redraw at most ~20 times a second, and always at the end.
  if (!finalize && std::chrono::duration<double>(now - last_draw_).count() < 0.05) return;
  last_draw_ = now;
  const int width = 20;
  int filled = target_ > 0 ? static_cast<int>(width * current / target_) : width;
  std::string bar;
  for (int i = 0; i < width; ++i) bar += i < filled ? "\u2501" : "\u2500";  // heavy vs light line
  std::string timing = finalize ? format_duration(elapsed) + " " + format_per_step(per_step)
                                : format_duration(per_step * static_cast<double>(target_ - current)) + " " + format_per_step(per_step);
  std::string line = std::string(head) + " " + bar + " " + timing + format_logs(logs);
  size_t pad = last_width_ > line.size() ? last_width_ - line.size() : 0;
  last_width_ = line.size();
  std::fprintf(out_, "\r%s%s%s", line.c_str(), std::string(pad, ' ').c_str(), finalize ? "\n" : "");
  std::fflush(out_);
}

void ProgbarLogger::on_train_begin(const Logs&) { in_fit_ = true; }

void ProgbarLogger::on_epoch_begin(int epoch, const Logs&) {
  if (verbose_ == 0) return;
  auto it = params_.find("epochs");
  int epochs = it == params_.end() ? 0 : static_cast<int>(it->second);
  std::fprintf(out_, "Epoch %d/%d\n", epoch + 1, epochs);
  std::fflush(out_);
  auto steps = params_.find("steps");
  start(steps == params_.end() ? 0 : static_cast<int64_t>(steps->second));
}

void ProgbarLogger::on_train_batch_end(int batch, const Logs& logs) {
  seen_ = batch + 1;
  update(seen_, logs, false);
}

void ProgbarLogger::on_epoch_end(int, Logs& logs) { update(seen_, logs, true); }

void ProgbarLogger::on_test_begin(const Logs&) {
  if (in_fit_) return;  // validation inside fit shows in the epoch line
  auto steps = params_.find("steps");
  start(steps == params_.end() ? 0 : static_cast<int64_t>(steps->second));
}

void ProgbarLogger::on_test_batch_end(int batch, const Logs& logs) {
  if (in_fit_) return;
  seen_ = batch + 1;
  update(seen_, logs, false);
}

void ProgbarLogger::on_test_end(const Logs& logs) {
  if (!in_fit_) update(seen_, logs, true);
}

void ProgbarLogger::on_predict_begin(const Logs&) {
  auto steps = params_.find("steps");
  start(steps == params_.end() ? 0 : static_cast<int64_t>(steps->second));
}

void ProgbarLogger::on_predict_batch_end(int batch, const Logs& logs) {
  seen_ = batch + 1;
  update(seen_, logs, false);
}

void ProgbarLogger::on_predict_end(const Logs& logs) { update(seen_, logs, true); }

}  // namespace keras
