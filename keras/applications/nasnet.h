// NASNetMobile and NASNetLarge (keras.applications.nasnet; Zoph et al., CVPR 2018), built with
// Keras's layer names (stem_conv1, reduction_conv_1_stem_1, separable_conv_1_normal_left1_0,
// normal_concat_0, ..., and Keras's automatic names for the unnamed relus, paddings, croppings
// and merges: activation, activation_1, ..., zero_padding2d, cropping2d, concatenate, add), layer
// order and weight order, so that the weights files Keras publishes (nasnet_mobile[_no_top].h5,
// nasnet_large[_no_top].h5, legacy weights-only HDF5) load by topology through `weights`
// (application_options.h), and to_json() equals what Keras writes for the same arguments.
//
//   auto m = keras::applications::NASNetMobile({.include_top = false, .input_shape = {96, 96, 3},
//                                               .pooling = "avg"});
//   Tensor x = keras::applications::nasnet::preprocess_input(images);   // "tf" mode
//
// Keras 3 creates NASNet's variables under name scopes (the path of separable_conv_1_normal_left1_0's
// kernel is normal_A_block_0/block_1/separable_conv_block_normal_left1_0/separable_conv_1_...);
// here a weight's path is <layer>/<weight>. No file keys on the scope (.weights.h5 and .keras by
// layer, legacy .h5 by position).
#pragma once
#include <memory>
#include <string>

#include "keras/applications/application_options.h"
#include "keras/applications/decode_predictions.h"
#include "keras/applications/imagenet_utils.h"
#include "keras/models/model.h"

namespace keras::applications {

using NASNetOptions = ApplicationOptions;

// Minimum input 32x32. NASNetMobile: default 224x224, also without the top (Keras's input is
// then (224, 224, 3) rather than any size); NASNetLarge: default 331x331. With "imagenet" and
// include_top the input must be the default; with "imagenet" a given input_shape must be static.
// Other errors as application_options.h says.
std::shared_ptr<Model> NASNetMobile(const NASNetOptions& options = {});
std::shared_ptr<Model> NASNetLarge(const NASNetOptions& options = {});

namespace nasnet {
using imagenet_utils::decode_predictions;
using imagenet_utils::tf::preprocess_input;  // "tf" mode
}  // namespace nasnet

namespace detail {

// The arguments of Keras's module-level builder keras.applications.nasnet.NASNet (which Keras
// does not export): NASNetMobile is {1056, 4, 32, false, 2, 224}, NASNetLarge {4032, 6, 96, true,
// 2, 331}. Internal; here so that a NASNet Keras built with other arguments can be rebuilt.
struct NASNetArchitecture {
  int64_t penultimate_filters = 4032;  // a multiple of 24 * filter_multiplier^2
  int num_blocks = 6;                  // normal cells per stage
  int64_t stem_block_filters = 96;
  bool skip_reduction = true;  // the cells after a reduction see its input rather than its output
  int64_t filter_multiplier = 2;
  int64_t default_size = 331;  // the input side without input_shape; 224 or 331 for "imagenet"
};

// Keras's NASNet(input_shape, penultimate_filters, ..., name="NASNet"): the errors of
// NASNetMobile, named after `where`, plus ValueError for a penultimate_filters that is not a
// multiple of 24 * filter_multiplier^2 and for "imagenet" with a default_size other than 224 or 331.
std::shared_ptr<Model> NASNet(const NASNetOptions& options, const NASNetArchitecture& architecture,
                              const std::string& where = "NASNet");

}  // namespace detail

}  // namespace keras::applications
