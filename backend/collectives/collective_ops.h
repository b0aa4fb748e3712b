// Collectives as differentiable ops, for layers that compute over the whole data-parallel batch
// (synchronised BatchNormalization).
#pragma once
#include "backend/collectives/communicator.h"

namespace keras::ops {

// The sum of `x` over the processes of collectives::training_group() (x itself when there is no
// group). Every process must call it with the same shape, in the same order. Its gradient is the
// same sum of the gradients: each process's loss depends on every process's x.
Tensor all_sum(const Tensor& x);

}  // namespace keras::ops
