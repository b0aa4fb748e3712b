// Keras's dtype policies (keras.DTypePolicy, keras.mixed_precision): the dtype a layer keeps its
// variables in and the dtype it computes in.
//
//   keras::mixed_precision::set_global_policy("mixed_bfloat16");  // layers made from now on
//   Dense({.units = 10, .activation = "softmax", .dtype = "float32"});  // one layer kept float32
//
// Policies: "float32" (the default), "float64", "mixed_bfloat16" and "mixed_float16" (float32
// variables and optimizer state, two-byte compute), "bfloat16" and "float16" (both two-byte:
// such variables cannot be trained, as the optimizers update float32 or float64 in place).
// Under a policy other than float32 a layer casts its floating inputs to the compute dtype and
// reads its float32 variables cast to it (keras's autocast); a float32 layer casts two-byte inputs
// to float32. float64 inputs of a float32 layer stay float64 (the gradient checks' convention;
// Keras would cast them). Losses and metrics compute in float32.
#pragma once
#include <string>

#include "backend/dtype.h"

namespace keras {

struct DTypePolicy {
  std::string name = "float32";
  DType variable_dtype = DType::float32;
  DType compute_dtype = DType::float32;

  // The policy of a name above; "" is the global policy. TypeError naming `where` otherwise.
  static DTypePolicy from_name(const std::string& name, const std::string& where = "dtype policy");
  // Whether inputs of dtype `t` are cast to compute_dtype when the layer is called.
  bool casts_input(DType t) const;
};

namespace mixed_precision {
// The policy of layers created without a dtype from now on (Keras's set_global_policy; process-
// wide). TypeError for an unknown name, and the global policy stays as it was.
void set_global_policy(const std::string& name);
DTypePolicy global_policy();
}  // namespace mixed_precision

}  // namespace keras
