// Host-side index plans for the CUDA kernels: a tensor's (shape, strides) or a broadcast
// operand turned into kernels::Indexer, with adjacent axes merged where every operand allows it
// so that kernels do as little index arithmetic as possible.
#pragma once
#include <vector>

#include "backend/cuda/kernels.h"
#include "backend/shape.h"

namespace keras::cuda {

// Strides (in elements) of an operand of shape `in` broadcast to `out` (rank >= in's): the
// contiguous strides, 0 on stretched and missing axes.
Shape broadcast_strides(const Shape& in, const Shape& out);

// One Indexer per stride list over the shared `shape`, merged jointly; throws
// NotImplementedError (naming `where`) when more than kernels::kMaxRank axes remain.
std::vector<kernels::Indexer> make_indexers(const Shape& shape, const std::vector<Shape>& strides, const char* where);

// One Indexer per operand shape broadcast to `out` (make_indexers over broadcast_strides): the
// plans of the elementwise ops with broadcasting.
std::vector<kernels::Indexer> broadcast_indexers(const Shape& out, const std::vector<Shape>& operands, const char* where);

}  // namespace keras::cuda
