// Shared pieces of the resize op definitions: resize_bilinear (backend/ops_spatial.cpp) and
// resize_nearest (backend/ops_image.cpp) have the same shape rules and the same gradient
// structure (a linear map whose adjoint is a registered *_grad op, and back).
#pragma once
#include <string>
#include <vector>

#include "backend/op_registry.h"

namespace keras::detail {

// TypeError unless x is float32/float64; ShapeError unless it is rank 4 (N, H, W, C). `where`
// names the op.
void check_image_spec(const std::string& where, const TensorSpec& x);

// Attr "size" as (out_h, out_w); ValueError unless 2 positive extents.
std::vector<int64_t> resize_out_size(const Attrs& a, const std::string& where);

// Makes `def` a resize op: x (N, H, W, C) -> (N, size[0], size[1], C), attr size; its gradient
// runs op `grad_name` with attrs size and input_shape.
void define_resize_op(OpDef& def, const std::string& grad_name);

// Makes `def` the gradient op of resize op `forward_name`: grad (N, size, C) -> (input_shape),
// attrs size and input_shape; linear, so its own gradient is the forward resize.
void define_resize_grad_op(OpDef& def, const std::string& forward_name);

}  // namespace keras::detail
