// Keras 2 HDF5 layer weights (keras-formats.md sections 1-2): the `/model_weights` group of a
// full-model `.h5`, or the root of a `save_weights("w.h5")` file. Written in the pure Keras 2
// schema, which Keras 2 and Keras 3 both read:
//   attrs layer_names (every layer of Model::layers(), weightless ones included; fixed-length
//         strings, split past 64512 bytes), backend, keras_version
//   <layer name>/             attr weight_names = ["<variable path>:0", ...]; datasets at those
//                             (relative) names. Order: trainable_weights then non_trainable_weights,
//                             so a nested model lists all trainable sublayer weights first.
//   top_level_model_weights/  the model's own variables (normally none), not in layer_names
// `/optimizer_weights` (full-model files): attr weight_names + datasets = Optimizer::variables().
#pragma once
#include "keras/saving/hdf5/hdf5.h"
#include "keras/saving/weights_io.h"

namespace keras {

class Layer;
namespace optimizers {
class Optimizer;
}

// The version and backend written into legacy files (the Keras 2 schema that both generations read).
inline constexpr const char* kLegacyKerasVersion = "2.15.0";
inline constexpr const char* kLegacyBackend = "tensorflow";

// Writes the layer weights of `model` into `group` (a file root or a new `model_weights`
// group). A Model contributes its layers(); any other layer is written as a model of one layer.
// ValueError when a layer is named "top_level_model_weights" or two weights share a path.
void write_legacy_weights(hdf5::Group& group, const Layer& model);

// Reads layer weights into `model` from `group`, or from its `model_weights` child when `group`
// has no layer_names (a full-model file's root). Matching, as Keras:
//  - default (topological): the model's layers that own weights pair by position with the file's
//    layers whose weight_names are non-empty; the counts must match (IOError even with
//    skip_mismatch); names are ignored. Within a layer, weights go by position in the
//    trainable-then-non-trainable order of the model's current trainable flags; when the file's
//    weight names are exactly the names this writer would give (a file we wrote), by name, so a
//    change of freezing between save and load does not scramble a nested model.
//  - by_name: each saved layer (name mapped through name_map) loads into the model layer (of
//    Model::layers()) of that name; unmatched saved layers are skipped, unmatched model layers
//    reported missing.
//  - skip_mismatch: a layer whose weight count differs, or a weight whose shape differs, is
//    skipped and reported instead of failing.
// top_level_model_weights, when present and non-empty, is applied last. All-or-nothing: nothing
// is assigned unless every check passes. IOError naming the file and entry (missing attribute or
// group, Keras 1 file without keras_version, count or shape mismatch); ValueError for name_map
// without by_name.
LoadReport read_legacy_weights(const hdf5::Group& group, Layer& model, const LoadWeightsOptions& options = {});

// Writes Optimizer::variables() into `group` (normally a new `/optimizer_weights`).
void write_legacy_optimizer_weights(hdf5::Group& group, const optimizers::Optimizer& optimizer);

// Restores optimizer state by position from `group` (an `/optimizer_weights` group); an unbuilt
// optimizer is first built for model.trainable_weights(). Counts and shapes must match, except
// that a file without a learning-rate entry (Keras 2) leaves the learning rate unchanged.
// All-or-nothing; IOError on mismatch, or a skipped entry in the report with skip_mismatch.
LoadReport read_legacy_optimizer_weights(const hdf5::Group& group, optimizers::Optimizer& optimizer,
                                         const Layer& model, bool skip_mismatch = false);

}  // namespace keras
