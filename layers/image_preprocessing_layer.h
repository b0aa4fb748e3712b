// ImagePreprocessingLayer: the base of the layers Keras 3 derives from BaseImagePreprocessingLayer
// (Resizing, CenterCrop, RandomCrop, RandomFlip, RandomRotation, RandomZoom, RandomTranslation,
// RandomContrast, RandomBrightness).
//
// Contract for readers of Keras configs: Keras 3 declares these layers' call as
// call(data, training=True) and writes that default, `"training": true`, into the kwargs of every
// functional node it saves; its Functional.call then replaces it by the model's own training mode
// whenever one is given (always, under fit, evaluate and predict). A loaded config's `training`
// kwarg on such a layer is therefore not replayed (keras/saving/model_from_config.cpp), so a Keras
// model with augmentation predicts without augmenting, as in Keras.
#pragma once
#include "layers/layer.h"

namespace keras::layers {

class ImagePreprocessingLayer : public Layer {
 public:
  using Layer::Layer;
};

}  // namespace keras::layers
