// adapt(layer, dataset): a preprocessing layer learns its state from a data::Dataset, as Keras's
// layer.adapt(tf.data.Dataset). Here because layers/ knows nothing of keras/data.
//
//   auto norm = keras::layers::Normalization({.axis = {-1}});
//   keras::adapt(*norm, keras::data::Dataset::from_tensor_slices({x}).batch(256));
#pragma once
#include "keras/data/dataset.h"
#include "layers/normalization.h"

namespace keras {

// Each element is a batch, (x), (x, y) or (x, y, sample_weight), of which x is used (Keras's
// _extract_batch). As Keras does with a tf.data.Dataset, elements of rank 1 are taken as single
// samples and batched by 128 first. ValueError for a dataset with no element; the errors of
// NormalizationImpl::adapt_batches otherwise.
void adapt(layers::NormalizationImpl& layer, const data::Dataset& dataset);

}  // namespace keras
