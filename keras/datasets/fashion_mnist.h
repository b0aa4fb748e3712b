// Built-in data sets, loaded from local files (the library never downloads anything).
//
// Keras returns images as uint8; the framework has no uint8 dtype, so images come back as
// float32 holding the raw 0..255 pixel values (scale them yourself, e.g. multiply by 1/255),
// and labels as int64 class indices.
#pragma once
#include <array>
#include <string>

#include "backend/tensor.h"

namespace keras::datasets {

// One split of a labelled data set: x holds the samples, y the labels (same first extent).
struct Split {
  Tensor x;
  Tensor y;
};

// What load_data returns: `auto [train, test] = fashion_mnist::load_data();`.
struct TrainTest {
  Split train;
  Split test;
};

namespace fashion_mnist {

// Where load_data looks when no directory is given: $KERAS_DATASETS_DIR/fashion-mnist when
// that variable is set, otherwise /usr/share/datasets/fashion-mnist (Debian package
// dataset-fashion-mnist).
std::string default_directory();

// Loads Fashion-MNIST from `directory` (default_directory() when empty), which holds the four
// IDX files train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and
// t10k-labels-idx1-ubyte, each gzip-compressed (.gz) or plain.
// Returns train: x float32 (60000, 28, 28), y int64 (60000,); test: x (10000, 28, 28), y (10000,).
// Pixel values are 0..255, labels 0..9 (see class_names).
// Throws IOError naming the file for a missing file (with how to install it), a bad IDX magic
// number, wrong image size, image/label count mismatch, truncated or trailing data, or a label
// outside 0..9.
TrainTest load_data(const std::string& directory = "");

// Keras's names of the ten classes, indexed by label.
inline constexpr std::array<const char*, 10> class_names = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

}  // namespace fashion_mnist
}  // namespace keras::datasets
