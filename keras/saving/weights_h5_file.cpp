#include "keras/saving/weights_h5_file.h"

#include "keras/utils/file_util.h"
#include "keras/saving/hdf5/hdf5.h"
#include "keras/saving/legacy_weights.h"
#include "keras/models/model.h"
#include "keras/saving/weights_h5.h"

namespace keras {

namespace {

// The optimizer whose state travels with the weights: a compiled model's.
optimizers::Optimizer* model_optimizer(const Layer& model) {
  const auto* m = dynamic_cast<const Model*>(&model);
  return m && m->compiled() ? m->optimizer() : nullptr;
}

}  // namespace

void save_weights_h5(const Layer& model, const std::string& path) {
  const bool tree = path.ends_with(".weights.h5");
  if (!tree && !path.ends_with(".h5") && !path.ends_with(".hdf5"))
    fail<ValueError>("save_weights_h5('" + path + "')", "a path ending in .weights.h5 (Keras 3) or .h5 (Keras 2)",
                     "another suffix", ".keras files hold a whole model; save them with save_model.");
  hdf5::File file = hdf5::File::create_in_memory(path);
  hdf5::Group root = file.root();
  if (tree) {
    write_weights_tree(root, model, model_optimizer(model));
  } else {
    write_legacy_weights(root, model);
  }
  write_file_atomic(path, file.image());
}

LoadReport load_weights_h5(Layer& model, const std::string& path, const LoadWeightsOptions& options) {
  hdf5::File file = hdf5::File::open(path);
  hdf5::Group root = file.root();
  if (root.has_string_list_attr("layer_names") || root.has_group("model_weights"))
    return read_legacy_weights(root, model, options);
  if (root.has_group("layers") || root.has_group("vars"))
    return read_weights_tree(root, model, model_optimizer(model), options);
  fail<IOError>(root.where(), "Keras weights (a 'layers'/'vars' tree or a 'layer_names' attribute)", "neither",
                "This HDF5 file was not written by Keras.");
}

}  // namespace keras
