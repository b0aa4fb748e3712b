// The Keras 3 weights tree (keras-formats.md section 3): the content of `x.weights.h5` and of
// `model.weights.h5` inside a `.keras` zip.
//
//   /vars                         attr name = model name (model-owned variables, usually none)
//   /layers/<key>/vars/0..n-1     a layer's own variables in creation order, attr name = layer name
//   /layers/<key>/layers/...      a nested model's layers, recursively
//   /optimizer/vars/0..N          Optimizer::variables(), attr name = optimizer name
// <key> is the snake_case class name deduplicated per container in order (dense, dense_1, ...),
// not the layer name; containers are Model::layers() (a Functional's InputLayers included, a
// Sequential's excluded), or sublayers() for other composite layers. A layer that keys its
// sublayers (KeyedSublayers: RNN's cell, MultiHeadAttention's query_dense, ...) has them right
// below its own path, as Keras keys tracked attributes: /layers/multi_head_attention/query_dense/vars.
// A layer reached twice (shared) is written once, at its first path.
#pragma once
#include "keras/saving/hdf5/hdf5.h"
#include "keras/saving/weights_io.h"

namespace keras {

class Layer;
namespace optimizers {
class Optimizer;
}

// Writes the tree of `model` (any Layer) under `root` (usually a file's root group), plus
// `optimizer/vars` when `optimizer` is given and built. IOError when an entry already exists.
void write_weights_tree(hdf5::Group& root, const Layer& model, const optimizers::Optimizer* optimizer = nullptr);

// Reads a tree into `model`, and into `optimizer` when given and the file holds optimizer state
// (an unbuilt optimizer is first built for model.trainable_weights(); state is restored by
// position, counts and shapes checked; not with by_name).
// Matching:
//  - default: by structural path, as Keras. A layer with variables needs its `vars` group with
//    exactly its variable count and shapes; a weightless layer tolerates a missing or empty one.
//    File entries with no counterpart in the model are reported skipped.
//  - by_name: every layer (at any depth) with variables takes the `vars` group whose `name`
//    attribute (mapped through name_map) equals its name; when several entries share a name,
//    the one at the layer's own structural path wins, else it is an error. Layers without a
//    match are reported missing; unmatched entries skipped.
// All-or-nothing: everything is read and checked before any weight is assigned. IOError naming
// the file and entry for a missing entry or a count/shape mismatch (reported and skipped instead
// with skip_mismatch); ValueError for name_map without by_name.
LoadReport read_weights_tree(const hdf5::Group& root, Layer& model, optimizers::Optimizer* optimizer = nullptr,
                             const LoadWeightsOptions& options = {});

}  // namespace keras
