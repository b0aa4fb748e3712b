#include "layers/max_pooling1d.h"

#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

MaxPooling1DImpl::MaxPooling1DImpl(Pooling1DOptions options)
    : PoolingBaseImpl(config::base_options(options), true, 1, {1, options.pool_size}, {1, options.strides.value_or(options.pool_size)}, options.padding, options.data_format),
      options_(std::move(options)) {
  validate_options();
}

KERAS_REGISTER_LAYER(MaxPooling1D, [](const json& c) -> LayerPtr { return std::make_shared<MaxPooling1DImpl>(pooling1d_options_from_config(c)); });
KERAS_SIGNATURE(MaxPooling1D, .built_at_init = true);

}  // namespace keras::layers
