#include "layers/average_pooling1d.h"

#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

AveragePooling1DImpl::AveragePooling1DImpl(Pooling1DOptions options)
    : PoolingBaseImpl(config::base_options(options), false, 1, {1, options.pool_size}, {1, options.strides.value_or(options.pool_size)}, options.padding, options.data_format),
      options_(std::move(options)) {
  validate_options();
}

KERAS_REGISTER_LAYER(AveragePooling1D, [](const json& c) -> LayerPtr { return std::make_shared<AveragePooling1DImpl>(pooling1d_options_from_config(c)); });
KERAS_SIGNATURE(AveragePooling1D, .built_at_init = true);

}  // namespace keras::layers
