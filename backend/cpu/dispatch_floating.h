// dispatch_floating(dtype, where, f): calls f(float{}) or f(double{}) for a float32/float64
// dtype, TypeError naming `where` otherwise. For the plain-loop kernels that template on T.
#pragma once
#include "backend/errors.h"
#include "backend/tensor.h"

namespace keras::cpu {

template <class F>
void dispatch_floating(DType t, const char* where, F&& f) {
  if (t == DType::float32) f(float{});
  else if (t == DType::float64) f(double{});
  else fail<TypeError>(where, "float32 or float64", dtype_name(t));
}

}  // namespace keras::cpu
