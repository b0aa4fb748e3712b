// Weights files in Keras's HDF5 formats, by path: Model.save_weights / load_weights for
// `.weights.h5` (Keras 3 tree, weights_h5.h) and `.h5` (Keras 2 layer weights, legacy_weights.h).
//
//   keras::save_weights_h5(model, "ckpt.weights.h5");
//   auto report = keras::load_weights_h5(model, "pretrained.h5", {.by_name = true, .skip_mismatch = true});
#pragma once
#include <string>

#include "keras/saving/weights_io.h"

namespace keras {

class Layer;

// Saves the weights of `model`: a path ending in `.weights.h5` gets the Keras 3 tree, including
// the optimizer state of a compiled Model whose optimizer is built (as Keras's save_weights);
// `.h5` / `.hdf5` the Keras 2 weights-only layout (no optimizer state, as Keras 2). Written to a
// temporary file and renamed, so a failed save leaves a previous file intact. ValueError for
// another suffix; IOError from the write.
void save_weights_h5(const Layer& model, const std::string& path);

// Loads weights saved by save_weights_h5, Keras 3's save_weights or Keras 2's save_weights /
// model.save("x.h5") (the `/model_weights` group). The layout is recognised from the content,
// not the suffix. A Keras 3 tree also restores the optimizer state into a compiled Model (its
// optimizer built first when needed); a legacy file never does (as Keras). Matching, options and
// errors: read_weights_tree / read_legacy_weights. IOError naming the file for a missing,
// truncated or non-Keras file; the model is unchanged on any error.
LoadReport load_weights_h5(Layer& model, const std::string& path, const LoadWeightsOptions& options = {});

}  // namespace keras
