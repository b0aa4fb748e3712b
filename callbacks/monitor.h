// What the monitoring callbacks (EarlyStopping, ReduceLROnPlateau, ModelCheckpoint) share:
// resolving mode "auto" to a direction, the improvement test, warnings, and checks for
// non-finite values.
#pragma once
#include <optional>
#include <string>

#include "backend/tensor.h"
#include "keras/models/callback.h"

namespace keras::callbacks {

enum class Direction { min, max };

// The direction of `mode` ("min", "max" or "auto") for the logged quantity `monitor`.
// "auto" follows Keras 3: "loss"/"val_loss" -> min; otherwise the direction() of the compiled
// metric whose name is `monitor` without its "val_" prefix (searched in model->metrics());
// std::nullopt when that is unknown (the caller decides: error or a legacy fallback).
// Throws ValueError (naming `where`) for a mode other than auto/min/max.
std::optional<Direction> resolve_direction(const std::string& where, const std::string& mode,
                                           const std::string& monitor, const Model* model);

// Keras 2's name rule, the fallback where no direction is declared: "acc" in the name -> max.
Direction legacy_direction(const std::string& monitor);

// Whether `current` beats `reference` by more than `min_delta` (>= 0) in `direction`:
// min: current + min_delta < reference; max: current - min_delta > reference.
bool is_improvement(Direction direction, double current, double reference, double min_delta);

// The worst possible value in `direction` (+inf for min), the start of a "best so far".
double worst_value(Direction direction);

// Prints "WARNING: <who>: <message>" on stderr (Keras warns and carries on in these cases).
void warn(const std::string& who, const std::string& message);

// "loss, accuracy, val_loss": the keys of `logs`, for messages.
std::string key_list(const Logs& logs);

// Whether every element of a floating tensor is finite (integer tensors always are).
bool all_finite(const Tensor& t);

}  // namespace keras::callbacks
