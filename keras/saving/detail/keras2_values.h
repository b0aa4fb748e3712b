// Internal: the Keras 2 form of values inside a config (shared by to_keras2 and the legacy
// training_config writer).
#pragma once
#include <nlohmann/json.hpp>

namespace keras {

// Keras 3 objects nested in `j` (initializers, regularizers, constraints, losses, metrics,
// optimizers) become {"class_name", "config"} (custom classes "package>Class"); dtype policy
// objects become their name. Layers nested in a layer's config (RNN.cell, Bidirectional.layer)
// keep the Keras 3 object form that tf_keras also writes, with a Keras 2 config. Everything else
// is kept.
nlohmann::json keras2_values(const nlohmann::json& j);

}  // namespace keras
