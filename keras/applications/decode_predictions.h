// keras.applications.imagenet_utils.decode_predictions: the ImageNet classes an ImageNet
// classifier's output scores highest.
//
//   auto top = keras::applications::imagenet_utils::decode_predictions(model->predict(x), 3);
//   top[0][0].class_id;     // "n02123045"  (WordNet id)
//   top[0][0].description;  // "tabby"
//   top[0][0].score;        // 0.71
//
// The class names come from Keras's imagenet_class_index.json ({"0": ["n01440764", "tench"],
// ..., "999": [...]}), read from Keras's download cache ($KERAS_HOME/models, else
// ~/.keras/models), where Keras's own decode_predictions keeps it, or from a path given. This
// library never downloads: fetch kImagenetClassIndexUrl into that folder once.
#pragma once
#include <string>
#include <vector>

#include "backend/tensor.h"

namespace keras::applications::imagenet_utils {

inline const std::string kImagenetClassIndexUrl =
    "https://storage.googleapis.com/download.tensorflow.org/data/imagenet_class_index.json";

struct DecodedPrediction {
  std::string class_id;     // WordNet id, "n01440764"
  std::string description;  // "tench"
  double score = 0;         // the prediction's value, exactly (float32 scores are widened)
  bool operator==(const DecodedPrediction&) const = default;
};

struct DecodePredictionsOptions {
  int64_t top = 5;              // >= 1; more than 1000 gives all 1000
  std::string class_index_path;  // "": imagenet_class_index.json in Keras's download cache
};

// For each row of `preds` (N, 1000) of any real dtype, on any device, the `top` classes with
// the highest scores, highest first; equal scores in ascending class order (Keras's order among
// equal scores is that of NumPy's unstable argsort, which depends on the machine).
// ValueError: preds not (N, 1000) (Keras's "expects a batch of predictions (i.e. a 2D array of
// shape (samples, 1000))"), top < 1 (Keras's slicing returns every class for 0), an index that
// is not 1000 entries "0".."999" of [class_id, description]. IOError: the index file missing
// (naming its path and kImagenetClassIndexUrl) or not JSON.
std::vector<std::vector<DecodedPrediction>> decode_predictions(const Tensor& preds,
                                                               const DecodePredictionsOptions& options);
// Keras's signature: decode_predictions(preds, top=5), the index from Keras's cache.
inline std::vector<std::vector<DecodedPrediction>> decode_predictions(const Tensor& preds, int64_t top = 5) {
  DecodePredictionsOptions options;
  options.top = top;
  return decode_predictions(preds, options);
}

}  // namespace keras::applications::imagenet_utils
