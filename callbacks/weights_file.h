// The framework's own weights file: named tensors in a small binary format, used by
// ModelCheckpoint and BackupAndRestore until (and besides) the Keras formats of the saving
// work. Tensors are found by PATH ("dense_1/kernel", DESIGN.md decision 5), never by position.
//
// Layout (little-endian):
//   "KERASWT1"  u64 count  u32 crc32(magic + count)
//   per entry:  u32 path_len, path, u8 dtype_len, dtype name ("float32"), u32 rank,
//               i64 dims[rank], u64 nbytes, data, u32 crc32(entry bytes before it)
// Per-entry checksums let a corrupt file name the broken entry. Writes go to a temporary file
// in the same directory that is then renamed over the target, so a crash mid-save leaves the
// previous file intact (decision 10).
#pragma once
#include <string>
#include <vector>

#include "backend/tensor.h"
#include "backend/variable.h"
#include "keras/utils/file_util.h"

namespace keras {
class Layer;
}

namespace keras::callbacks {

struct NamedTensor {
  std::string path;
  Tensor value;
};

// Crash-safe whole-file I/O now lives in keras/utils/file_util.h; kept reachable here for callers.
using ::keras::read_file_bytes;
using ::keras::write_file_atomic;

// Writes the tensors (any device and layout; stored contiguous). ValueError for an empty or
// duplicate path; IOError from the write.
void write_tensor_file(const std::string& filename, const std::vector<NamedTensor>& entries);
// Reads every entry into host tensors, in file order. IOError naming the file and the entry
// (index and path when known) for a missing file, bad magic, truncation, a checksum mismatch,
// an unknown dtype or a size that does not match the shape.
std::vector<NamedTensor> read_tensor_file(const std::string& filename);

// Saves the variables by path.
void save_variables(const std::vector<Variable>& variables, const std::string& filename);
// Loads by path. All-or-nothing: every variable must have an entry with its exact shape and
// every entry must name a variable, checked before anything is assigned; otherwise IOError
// naming the file and the entry. A floating dtype difference is converted.
void load_variables(const std::vector<Variable>& variables, const std::string& filename);

// A model's (or layer's) weights() through save_variables / load_variables.
void save_weights_file(const Layer& model, const std::string& filename);
void load_weights_file(Layer& model, const std::string& filename);

}  // namespace keras::callbacks
