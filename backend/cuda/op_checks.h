// Small helpers shared by the CUDA kernel registrations (backend/cuda/*_ops.cpp): the stream a
// tensor's work goes on and the dtype checks that the kernels make before launching.
#pragma once
#include <string>

#include "backend/cuda/runtime.h"
#include "backend/tensor.h"

namespace keras::cuda {

inline cudaStream_t stream_of(const Tensor& t) { return stream(t.device().index); }

// TypeError "<op> (cuda): expected float32 or float64, got <dtype>. Cast the tensor first."
inline void require_float(const Tensor& t, const char* op) {
  if (!is_floating(t.dtype()))
    fail<TypeError>(std::string(op) + " (cuda)", "float32 or float64", dtype_name(t.dtype()), "Cast the tensor first.");
}
// TypeError for bool, which arithmetic kernels do not take.
inline void require_numeric(const Tensor& t, const char* op) {
  if (t.dtype() == DType::boolean)
    fail<TypeError>(std::string(op) + " (cuda)", "a numeric dtype", "bool", "Cast the tensor first.");
}

}  // namespace keras::cuda
