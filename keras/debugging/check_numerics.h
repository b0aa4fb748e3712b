// Check-numerics mode (tf.debugging.enable_check_numerics): while it is on, every op's floating
// outputs are checked as the op runs, in the forward pass and inside the backward walk (and the
// variables an in-place optimizer op updates), and the first NaN or infinity raises
// keras::NumericsError naming where it appeared:
//
//   check_numerics: op 'log' in layer 'sequential/log' (forward; train epoch 0, step 2): expected
//   finite values in output 0 (float32 (4, 3)), got 2 NaN and 0 Inf among 12 values, the first
//   at (0, 1). Inputs: #0 float32 (4, 3) min=-1.5 max=2 NaN=0 Inf=0. The inputs are finite, so
//   'log' made the first non-finite value.
//
// In the backward walk the phase reads "gradient of '<forward op>'" and the layer is the one the
// differentiated op ran under ("gradient accumulation" for the walk's own sums of gradients); an
// optimizer's in-place update reads "update".
// The step is Model's loop step (fit: train, epoch, batch; evaluate: test; predict: predict),
// or absent outside the loops.
//
// Off (the default) it costs one relaxed atomic load per op. On, each output is read once more
// (vectorised, threaded for large tensors); the README gives the measured overhead. Ops that
// return views (reshape, slices) are not checked: their values are another op's output. CUDA
// outputs are copied to the host to be checked. While on, Dense and Conv2D run their activation as
// an op of its own rather than a oneDNN post-op (whose relu maps NaN to 0), so a NaN made inside
// the product is seen there.
//
// The environment variable KERAS_CHECK_NUMERICS=1 (any value but "", "0" or "false") turns it on
// when the library loads, so any program can be checked without a rebuild.
#pragma once
#include "backend/errors.h"

namespace keras {

// A NaN or infinity found by check-numerics (TensorFlow raises InvalidArgumentError).
class NumericsError : public Error {
 public:
  using Error::Error;
};

namespace debugging {

// Process-wide; idempotent; thread-safe.
void enable_check_numerics();
void disable_check_numerics();
bool check_numerics_enabled();

}  // namespace debugging
}  // namespace keras
