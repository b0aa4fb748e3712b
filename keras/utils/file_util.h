// Whole-file reading and crash-safe writing, shared by every saver (weights, models, callbacks).
#pragma once
#include <string>

namespace keras {

// Writes `bytes` to `filename` through a temporary file in the same directory, fsync, rename
// (DESIGN.md decision 10): a crash mid-save leaves the previous file intact, never a partial
// one. IOError naming the file and the failing step (the target is then untouched and the
// temporary file removed).
void write_file_atomic(const std::string& filename, const std::string& bytes);

// The whole file. IOError naming it when it is missing, a directory or unreadable.
std::string read_file_bytes(const std::string& filename);

}  // namespace keras
