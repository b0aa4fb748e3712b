// Shapes are plain vectors of extents; -1 marks an unknown (batch) extent in symbolic shapes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace keras {

using Shape = std::vector<int64_t>;

// Product of extents (1 for a scalar).
int64_t shape_numel(const Shape& shape);
// "(2, 3)", "(None, 784)" for -1 extents, "()" for scalars.
std::string shape_str(const Shape& shape);
// Row-major strides, in elements.
Shape contiguous_strides(const Shape& shape);
// NumPy broadcasting of two shapes; throws ShapeError naming `where` when they do not fit.
Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& where);
// Maps a possibly negative axis into [0, rank); throws IndexError naming `where`.
int normalize_axis(int64_t axis, int64_t rank, const std::string& where);

}  // namespace keras
