#include "layers/average_pooling2d.h"

#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

AveragePooling2DImpl::AveragePooling2DImpl(Pooling2DOptions options)
    : PoolingBaseImpl(config::base_options(options), false, 2, options.pool_size.size2(), options.strides.value_or(options.pool_size).size2(), options.padding, options.data_format),
      options_(std::move(options)) {
  validate_options();
}

KERAS_REGISTER_LAYER(AveragePooling2D, [](const json& c) -> LayerPtr { return std::make_shared<AveragePooling2DImpl>(pooling2d_options_from_config(c)); });
KERAS_SIGNATURE(AveragePooling2D, .built_at_init = true);

}  // namespace keras::layers
