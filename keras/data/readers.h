// Readers that turn files into tensors and Datasets: CSV tables, NumPy .npy/.npz arrays, and a
// directory of images labelled by sub-folder (keras.utils.image_dataset_from_directory).
//
// Every bad file raises IOError naming the file and the row, entry or part that is wrong; nothing
// is half-loaded.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "keras/data/dataset.h"

namespace keras::data {

// ---------------------------------------------------------------- CSV

struct CsvOptions {
  bool header = true;    // first line names the columns
  char delimiter = ',';
  // Type of each column by position: float32, float64, int32 or int64 (empty: all float32).
  // An int column must hold integers; a row that does not is an IOError.
  std::vector<DType> column_types;
  // The label column, by header name or by position; neither set: no labels.
  std::string label_name;
  int64_t label_index = -1;
};

struct CsvData {
  Tensor features;  // (rows, columns - label); float32 unless every feature column shares one type
  Tensor labels;    // (rows,) in the label column's type; undefined without a label column
  std::vector<std::string> feature_names;  // from the header ("column_<i>" without one)
  std::string label_name;
};

// Reads a whole CSV file. Fields may be double-quoted ("a, b" with "" for a quote); blank lines
// are skipped; LF or CRLF line ends and a leading UTF-8 byte-order mark are accepted. Numbers
// read the same under any C locale ('.' is the decimal point). Throws IOError naming the file and
// line for a missing file, a row with a missing or extra field (or an empty one), text after a
// closing quote, or a value that does not parse as its column's type; ValueError for an unknown
// label column or bad column_types.
CsvData read_csv(const std::string& path, const CsvOptions& options = {});

// read_csv as a Dataset of (features, label) rows, or (features) without a label column.
Dataset csv_dataset(const std::string& path, const CsvOptions& options = {});

// ---------------------------------------------------------------- NPY / NPZ

// Reads a .npy file (format 1.0-3.0) of float16/32/64, int8/16/32/64, uint8/16 or bool, little-
// or big-endian, C or Fortran order; the result is C-ordered native. DType has no 8- or 16-bit
// types, so int8, int16, uint8 and uint16 load as int32 and float16 as float32, every value exact
// (mnist.npz's uint8 pixels come back as int32 0..255). Throws IOError naming the file for a
// missing file, a bad magic string or header, a shape whose size overflows int64, another dtype
// (uint32/64, complex, strings, records), or truncated data.
Tensor load_npy(const std::string& path);
// Writes `t` as a .npy (format 1.0, little-endian, C order). IOError when the file can't be written.
void save_npy(const std::string& path, const Tensor& t);

// Parses .npy bytes; `where` names the source in errors (e.g. "data.npz, entry 'x.npy'").
Tensor parse_npy(const std::string& bytes, const std::string& where);
std::string serialize_npy(const Tensor& t);

// Reads every array of a .npz (a zip of .npy files, stored or deflated as numpy.savez /
// savez_compressed write it), keyed by name without ".npy". IOError naming the file and the entry
// for a corrupt archive, a CRC mismatch or a bad array.
std::map<std::string, Tensor> load_npz(const std::string& path);
// Writes arrays as numpy.savez (stored) or numpy.savez_compressed (deflate).
void save_npz(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& arrays,
              bool compressed = false);

// ---------------------------------------------------------------- images

struct ImageDirectoryOptions {
  std::string labels = "inferred";   // "inferred" (from sub-folders) or "none"
  std::string label_mode = "int";    // "int" (int32), "categorical" (one-hot float32),
                                     // "binary" (float32 (n, 1)), or "" for no labels
  std::vector<std::string> class_names;  // explicit class order; must name the sub-folders
  std::string color_mode = "rgb";    // "grayscale", "rgb" or "rgba"
  int64_t batch_size = 32;           // 0: unbatched elements
  int64_t height = 256, width = 256; // image_size
  bool shuffle = true;
  std::optional<uint64_t> seed;
  double validation_split = 0.0;
  std::string subset;                // "training" or "validation" with validation_split
  std::string interpolation = "bilinear";  // "bilinear" or "nearest"
  bool follow_links = false;
  int64_t num_parallel_calls = AUTOTUNE;   // decoding threads
};

struct ImageDirectory {
  Dataset dataset;  // (images float32 (b, h, w, c) in 0..255, labels) or (images)
  std::vector<std::string> class_names;
  std::vector<std::string> file_paths;  // in dataset order before the per-epoch shuffle
};

// keras.utils.image_dataset_from_directory: every .png/.jpg/.jpeg/.bmp/.gif under
// directory/<class>/ (recursively), classes sorted alphabetically. Images are decoded lazily on
// worker threads; a file that does not decode raises IOError naming it when its batch is built.
// Throws ValueError for bad options, no images, or validation_split with shuffle but no seed;
// IOError naming the path for a missing directory or one that can't be listed (permissions,
// symlink loops).
ImageDirectory image_dataset_from_directory(const std::string& directory, const ImageDirectoryOptions& options = {});

// Decodes an image file to float32 (height, width, channels) with values 0..255; channels 1, 3
// or 4 (0: as stored). IOError naming the file when it is missing or does not decode.
Tensor load_image(const std::string& path, int channels = 3);
// Resizes a (h, w, c) or (n, h, w, c) float image as tf.image.resize (half-pixel centres, no
// antialiasing) with "bilinear" or "nearest". ValueError for other methods or sizes < 1.
Tensor resize_image(const Tensor& image, int64_t height, int64_t width, const std::string& interpolation = "bilinear");

}  // namespace keras::data
