#include "layers/gru.h"

#include "layers/flat_rnn_config.h"
#include "layers/keras_signature.h"
#include "layers/layer_registry.h"

namespace keras::layers {

GRUImpl::GRUImpl(GRUOptions o)
    : RNNImpl(config::base_options(o), std::make_shared<GRUCellImpl>(flat_cell_options<GRUCellOptions>(o, "gru_cell")),
              sequence_args_of(o)),
      options_(std::move(o)) {}

json GRUImpl::get_config() const { return flat_rnn_config(sequence_config(), options_); }

GRUOptions gru_options_from_config(const json& c) { return flat_rnn_options_from_config<GRUOptions>(c, "GRU config"); }

KERAS_REGISTER_LAYER(GRU, [](const json& c) -> LayerPtr { return std::make_shared<GRUImpl>(gru_options_from_config(c)); });
KERAS_SIGNATURE(GRU, .training_default = false, .takes_mask = true, .call_keywords = {"initial_state"},
                .legacy_list_keyword = "initial_state", .build_config = &rnn_build_config);

}  // namespace keras::layers
