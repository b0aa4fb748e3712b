// What every keras.applications constructor shares, so that each family file holds only its
// own blocks: the common arguments and Keras's checks of them, Keras's automatic layer names,
// the input, the classifier and pooling heads, and the final Model with its weights loaded.
// Internal to keras/applications/ (namespace detail); the public contract is each family's header.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "keras/models/model.h"

namespace keras::applications::detail {

// The arguments of every constructor (Keras's names and meanings), resolved by a family.
struct Args {
  std::string where;                // the constructor, for errors: "ResNet50"
  bool include_top = true;
  std::string weights;              // "", "imagenet" or a file path
  Shape input_shape;                // empty: Keras's None
  std::string pooling;              // "", "avg" or "max"
  int64_t classes = 1000;
  std::string classifier_activation = "softmax";
  std::string name;
};

// A family's options struct (which carries these members under Keras's names) as Args;
// `default_name` stands in for an empty name.
template <class O>
Args args_of(std::string where, const O& o, const std::string& default_name) {
  return {std::move(where), o.include_top, o.weights, o.input_shape, o.pooling, o.classes, o.classifier_activation,
          o.name.empty() ? default_name : o.name};
}

// Keras's first checks, as ValueErrors naming a.where: `weights` is "", "imagenet" or an
// existing file; with ImageNet weights and include_top, classes == 1000; classes >= 1 with
// include_top; pooling is "", "avg" or "max" (Keras ignores any other value silently).
void check_args(const Args& a);

// The file `weights` names: "" for random initialisation, the path given, or for "imagenet"
// `file` in Keras's download cache ($KERAS_HOME/models, else ~/.keras/models), which this
// library reads but never fills: IOError naming the file and where Keras downloads it from
// (`url_dir` + file) when it is not there.
std::string weights_file(const Args& a, const std::string& file, const std::string& url_dir);

// The path of `file` in Keras's download cache, where Keras's get_file(file, url,
// cache_subdir="models") keeps it ($KERAS_HOME/models, else ~/.keras/models): IOError naming
// `where`, that path and `url` (where Keras fetches it from) when it is not there.
std::string keras_cached_file(const std::string& where, const std::string& file, const std::string& url);

// weights_file for the common naming of Keras's files:
// <kKerasWeightsUrl><folder>/<stem>_weights_tf_dim_ordering_tf_kernels[_notop].h5.
inline const std::string kKerasWeightsUrl = "https://storage.googleapis.com/tensorflow/keras-applications/";
std::string standard_weights_file(const Args& a, const std::string& folder, const std::string& stem);

// Keras 3's automatic layer names, in the order the layers are created (Keras names a layer
// when it is constructed, the functional model only when it joins one): "Conv2D" gives
// conv2d, conv2d_1, conv2d_2, ...; each model build starts afresh, as after clear_session.
class AutoNames {
 public:
  std::string operator()(const std::string& class_name);

 private:
  std::map<std::string, int> used_;
};

// The model's Input, named "input_layer" as Keras 3 names it: obtain_input_shape with the
// family's sizes (ValueErrors naming a.where).
KerasTensor image_input(const Args& a, int64_t default_size, int64_t min_size);

// How every family but the MobileNets starts, in Keras's order: check_args, image_input, then
// standard_weights_file(a, folder, stem).
struct Start {
  KerasTensor input;
  std::string weights;
};
Start start(const Args& a, int64_t default_size, int64_t min_size, const std::string& folder, const std::string& stem);

// The MobileNets' input (min 32): a square input_shape of one of `sizes` (those Keras has
// weights for) is its own default size, anything else defaults to 224.
KerasTensor sized_input(const Args& a, const std::vector<int64_t>& sizes);
// The rows of the weights file Keras picks for `input`: its height when square and one of
// `sizes`, else 224 (Keras warns).
int64_t weights_rows(const KerasTensor& input, const std::vector<int64_t>& sizes);
// Keras's default MobileNet names: "<prefix>_<alpha with 2 decimals>_<rows or None>".
std::string sized_name(const std::string& prefix, double alpha, int64_t rows);

// Dense(classes, classifier_activation, name = "predictions"), after validate_activation.
KerasTensor predictions(const Args& a, const KerasTensor& x);

// The pooling head of include_top = false: GlobalAveragePooling2D / GlobalMaxPooling2D for
// pooling "avg" / "max", named "avg_pool" / "max_pool" where the family names them
// (`named`), else with the next automatic names; x itself for pooling "".
KerasTensor pooling(const Args& a, const KerasTensor& x, AutoNames& names, bool named);

// GlobalAveragePooling2D + predictions with include_top (the pooling named "avg_pool" when
// `named_top`, else automatically), pooling(a, x, names, named_pools) without.
KerasTensor classifier_or_pooling(const Args& a, const KerasTensor& x, AutoNames& names, bool named_top,
                                  bool named_pools);

// Keras's _make_divisible / _depth (MobileNetV2, V3): v rounded to the nearest multiple of
// `divisor` (at least `divisor`), never more than 10% below v.
int64_t make_divisible(double v, int64_t divisor = 8);

// A Keras 3 operation node of keras.src.ops.numpy, as Keras records arithmetic on KerasTensors
// (`x + 3.0`, `a + b`, `x * c`): `class_name` "Add" or "Multiply" applied to (x, y), named with the
// next automatic name of its class ("add", "add_1", ...; Keras's Add/Multiply layers share the
// counters). Written back as Keras writes it (layers/keras_operation.h); not in model.layers of
// Keras, holds no weights.
KerasTensor numpy_operation(const std::string& class_name, const KerasTensor& x, const KerasTensor& y,
                            AutoNames& names);
KerasTensor numpy_operation(const std::string& class_name, const KerasTensor& x, double y, AutoNames& names);

// The functional Model named a.name, with `weights_path` (from weights_file) loaded by
// topology as Keras's model.load_weights does.
std::shared_ptr<Model> finish(const Args& a, const KerasTensor& input, const KerasTensor& output,
                              const std::string& weights_path);

// The activation Keras writes for classifier_activation: None ("", "None") is "linear".
std::string activation_name(const std::string& classifier_activation);

}  // namespace keras::applications::detail
