// Reading tensor dumps (keras/debugging/tensor_dump.h) back: the index, a summary table of every
// tensor, and a tensor-by-tensor comparison of two dumps (a CPU and a GPU run, a run before and
// after a change). The command-line tool apps/tensor-dump prints these.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "backend/tensor.h"
#include "keras/debugging/tensor_stats.h"

namespace keras::debugging {

struct DumpEntry {
  std::string name, layer, class_name, kind, mode, dtype, file;
  int index = 0, call = 0, epoch = -1;
  int64_t step = -1;
  Shape shape;
  // What matches an entry across two dumps: "<name> @ <mode> epoch <e> step <s>".
  std::string key() const;
};

// The entries of DIR/index.json in their order. IOError naming the file for a missing or
// malformed index (not JSON, not a keras-tensor-dump, an entry lacking a field).
std::vector<DumpEntry> read_dump_index(const std::string& dir);
// The tensor of one entry (load_npy of DIR/file). IOError when the file is missing or its shape
// or dtype differs from the index.
Tensor load_dump_tensor(const std::string& dir, const DumpEntry& entry);

// A table: key, shape, dtype, min, max, mean, std, NaN, Inf per tensor.
std::string list_dump(const std::string& dir);

struct CompareOptions {
  double rtol = 1e-5;  // numpy.allclose's defaults: |a - b| <= atol + rtol * |b|
  double atol = 1e-8;
};

struct TensorDiff {
  std::string key;
  // "equal", "differ", "missing in A", "missing in B", "shape mismatch", "dtype mismatch"
  std::string status;
  std::string detail;   // the two shapes or dtypes for a mismatch
  double max_abs = 0;   // over elements both finite
  double max_rel = 0;   // |a - b| / |b| over elements both finite with b != 0
  int64_t mismatched = 0;  // elements outside the tolerance (NaN against a number, inf against another value)
  int64_t size = 0;
  bool ok() const { return status == "equal"; }
};

struct DumpComparison {
  std::vector<TensorDiff> tensors;  // in A's order, then those only in B
  bool all_equal() const;
  // A table, one line per tensor, and a last line "all M tensors match" or "N of M tensors do not
  // match: D differ, K missing, S with another shape or dtype".
  std::string str() const;
};

// Compares every tensor of dump A with the one of the same key in dump B. NaN matches NaN and an
// infinity the same infinity (the dumps of two equal runs compare equal). IOError for an
// unreadable index or tensor file.
DumpComparison compare_dumps(const std::string& dir_a, const std::string& dir_b, const CompareOptions& options = {});

}  // namespace keras::debugging
