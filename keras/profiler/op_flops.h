// Floating-point operations of one op run, for the profiler's FLOP/s: 2 per multiply-add of the
// contractions that dominate a network (matmul, dense, conv2d and its two backward ops, whatever
// the grouping), as the benchmark's count_macs and torch's flop counters count them. Every other
// op (elementwise, pooling, normalisation, ...) is 0, "unknown": the summary then shows no rate.
#pragma once
#include "backend/op_registry.h"

namespace keras::profiler {

double op_flops(const std::string& op, const TensorList& inputs, const TensorList& outputs, const Attrs& attrs);

}  // namespace keras::profiler
