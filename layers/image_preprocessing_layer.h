// ImagePreprocessingLayer: the base of the layers Keras 3 derives from BaseImagePreprocessingLayer
// (Resizing, CenterCrop, RandomCrop, RandomFlip, RandomRotation, RandomZoom, RandomTranslation,
// RandomContrast, RandomBrightness).
//
// Keras 3 declares these layers' call as call(data, training=True) and writes that default,
// `"training": true`, into the kwargs of the functional nodes it saves (their KERAS_SIGNATURE,
// layers/keras_signature.h); its Functional.call then replaces it by the model's own training mode
// whenever one is given (always, under fit, evaluate and predict). A loaded config's recorded
// default is therefore not replayed (keras/saving/model_from_config.cpp), so a Keras model with
// augmentation predicts without augmenting, as in Keras.
#pragma once
#include "layers/layer.h"

namespace keras::layers {

class ImagePreprocessingLayer : public Layer {
 public:
  using Layer::Layer;
};

}  // namespace keras::layers
