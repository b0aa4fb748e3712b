// Op determinism, as tf.config.experimental.enable_op_determinism: while on, kernels that could
// choose between a faster nondeterministic and a deterministic algorithm take the deterministic
// one (cuDNN convolution algorithms), so that two runs of the same program give bit-identical
// results. Kernels that are always deterministic (the CPU kernels, the CUDA reductions, which
// combine partial sums in a fixed order) ignore it. Process-wide; off by default.
#pragma once

namespace keras {

void set_op_determinism(bool enabled);
bool op_determinism();

}  // namespace keras
