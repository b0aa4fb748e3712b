// Shape manipulation ops of keras::ops: reshape, transpose, concatenate, slice, take, one_hot,
// expand_dims, squeeze, plus the two gradient helpers "slice_grad" (zero-padded placement) and
// "take_grad" (scatter-add into zeros).
//
// Shape functions accept symbolic shapes (-1 = unknown extent) so the functional API can infer
// through these ops; unknown extents pass through and are never reported as mismatches.
// reshape, expand_dims and squeeze are views: their kernel only re-describes the (contiguous)
// input, so one device-independent kernel serves every device kind.
#include <algorithm>
#include <numeric>

#include "backend/ops.h"

namespace keras {
namespace {

using Specs = std::vector<TensorSpec>;

std::string ints_str(const std::vector<int64_t>& v, const char* open = "[", const char* close = "]") {
  std::string s = open;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i]);
  }
  return s + close;
}
// A reshape target as a tuple that shows -1 literally (shape_str would print None).
std::string target_str(const Shape& t) { return ints_str(t, "(", t.size() == 1 ? ",)" : ")"); }

bool any_unknown(const Shape& s) {
  return std::any_of(s.begin(), s.end(), [](int64_t d) { return d < 0; });
}

// Resolves a reshape target (one -1 may be inferred) against the input shape.
Shape reshape_target(const Shape& in, const Shape& target) {
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      if (infer >= 0) fail<ShapeError>("reshape", "at most one -1 extent", "shape " + target_str(target));
      infer = static_cast<int>(i);
    } else if (target[i] < 0) {
      fail<ShapeError>("reshape", "extents >= 0 or a single -1", "shape " + target_str(target));
    } else {
      known *= target[i];
    }
  }
  if (any_unknown(in)) return target;  // symbolic: the -1 stays unknown
  int64_t n = shape_numel(in);
  Shape out = target;
  if (infer >= 0) {
    if (known == 0 || n % known != 0)
      fail<ShapeError>("reshape", "a target shape that can hold the " + std::to_string(n) + " elements of input shape " + shape_str(in),
                       "target shape " + target_str(target), "The known extents must divide the element count.");
    out[static_cast<size_t>(infer)] = n / known;
  }
  if (shape_numel(out) != n)
    fail<ShapeError>("reshape", "a target shape with " + std::to_string(n) + " elements, as input shape " + shape_str(in),
                     "target shape " + target_str(target) + " with " + std::to_string(shape_numel(out)) + " elements");
  return out;
}

Shape expand_dims_shape(const Shape& in, int64_t axis) {
  // The new axis may go anywhere in the rank+1 result, so the valid range is [-rank-1, rank].
  int64_t r = static_cast<int64_t>(in.size()) + 1;
  if (axis < -r || axis >= r)
    fail<IndexError>("expand_dims", "an axis in [" + std::to_string(-r) + ", " + std::to_string(r - 1) + "]",
                     "axis " + std::to_string(axis), "The input has shape " + shape_str(in) + ".");
  int64_t a = axis < 0 ? axis + r : axis;
  Shape out = in;
  out.insert(out.begin() + a, 1);
  return out;
}

Shape squeeze_shape(const Shape& in, int64_t axis) {
  if (in.empty()) fail<ShapeError>("squeeze", "a tensor of rank >= 1", "a scalar");
  int a = normalize_axis(axis, static_cast<int64_t>(in.size()), "squeeze");
  if (in[static_cast<size_t>(a)] != 1 && in[static_cast<size_t>(a)] >= 0)
    fail<ValueError>("squeeze", "axis " + std::to_string(axis) + " of extent 1",
                     "extent " + std::to_string(in[static_cast<size_t>(a)]) + " in shape " + shape_str(in),
                     "Only axes of extent 1 can be squeezed.");
  Shape out = in;
  out.erase(out.begin() + a);
  return out;
}

// Validates `perm` as a permutation of the axes of a rank-`rank` tensor; negative entries allowed.
std::vector<int64_t> normalize_perm(const std::vector<int64_t>& perm, size_t rank) {
  if (perm.size() != rank)
    fail<ValueError>("transpose", "a permutation with " + std::to_string(rank) + " entries (one per axis)",
                     "perm " + ints_str(perm));
  std::vector<int64_t> out(rank);
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < rank; ++i) {
    int a = normalize_axis(perm[i], static_cast<int64_t>(rank), "transpose");
    if (seen[static_cast<size_t>(a)])
      fail<ValueError>("transpose", "each axis exactly once in perm", "perm " + ints_str(perm), "Axis " + std::to_string(a) + " repeats.");
    seen[static_cast<size_t>(a)] = true;
    out[i] = a;
  }
  return out;
}

void require_index_dtype(const char* op, DType t, const char* what) {
  if (!is_integral(t))
    fail<TypeError>(op, std::string(what) + " of dtype int32 or int64", dtype_name(t));
}

// The per-axis [begin, begin+size) window of slice; size -1 runs to the end.
std::pair<Shape, Shape> slice_window(const Shape& in, const std::vector<int64_t>& begin, const std::vector<int64_t>& size) {
  if (begin.size() != in.size() || size.size() != in.size())
    fail<ValueError>("slice", "begin and size with " + std::to_string(in.size()) + " entries each (input shape " + shape_str(in) + ")",
                     "begin " + ints_str(begin) + ", size " + ints_str(size));
  Shape b = begin, s = size;
  for (size_t i = 0; i < in.size(); ++i) {
    int64_t d = in[i];
    if (b[i] < 0 || (d >= 0 && b[i] > d))
      fail<IndexError>("slice", "begin in [0, " + std::to_string(d) + "] on axis " + std::to_string(i) + " of shape " + shape_str(in),
                       "begin " + ints_str(begin));
    if (s[i] < -1) fail<ValueError>("slice", "sizes >= 0 or -1 (to the end)", "size " + ints_str(size));
    if (s[i] == -1) s[i] = d >= 0 ? d - b[i] : -1;
    else if (d >= 0 && b[i] + s[i] > d)
      fail<IndexError>("slice", "begin + size <= " + std::to_string(d) + " on axis " + std::to_string(i) + " of shape " + shape_str(in),
                       "begin " + ints_str(begin) + ", size " + ints_str(size));
  }
  return {b, s};
}

Specs reshape_shape(const Specs& in, const Attrs& a) { return {{reshape_target(in.at(0).shape, a.get_ints("shape")), in[0].dtype}}; }

Specs transpose_shape(const Specs& in, const Attrs& a) {
  const Shape& s = in.at(0).shape;
  auto perm = normalize_perm(a.get_ints("perm"), s.size());
  Shape out(s.size());
  for (size_t i = 0; i < s.size(); ++i) out[i] = s[static_cast<size_t>(perm[i])];
  return {{out, in[0].dtype}};
}

Specs concatenate_shape(const Specs& in, const Attrs& a) {
  if (in.empty()) fail<ValueError>("concatenate", "at least one tensor", "an empty list");
  const Shape& first = in[0].shape;
  if (first.empty()) fail<ShapeError>("concatenate", "tensors of rank >= 1", "input 0 of shape ()", "Scalars have no axis to join.");
  int axis = normalize_axis(a.get_int("axis"), static_cast<int64_t>(first.size()), "concatenate");
  Shape out = first;
  for (size_t i = 1; i < in.size(); ++i) {
    const Shape& s = in[i].shape;
    if (in[i].dtype != in[0].dtype)
      fail<TypeError>("concatenate", "every input of dtype " + dtype_name(in[0].dtype) + " (as input 0)",
                      "input " + std::to_string(i) + " of dtype " + dtype_name(in[i].dtype), "Cast first.");
    bool fits = s.size() == first.size();
    for (size_t d = 0; fits && d < s.size(); ++d)
      fits = static_cast<int>(d) == axis || s[d] == first[d] || s[d] < 0 || first[d] < 0;
    if (!fits)
      fail<ShapeError>("concatenate", "shapes equal to input 0 " + shape_str(first) + " except on axis " + std::to_string(axis),
                       "input " + std::to_string(i) + " of shape " + shape_str(s));
    out[static_cast<size_t>(axis)] = out[static_cast<size_t>(axis)] < 0 || s[static_cast<size_t>(axis)] < 0
                                         ? -1 : out[static_cast<size_t>(axis)] + s[static_cast<size_t>(axis)];
  }
  return {{out, in[0].dtype}};
}

Specs slice_shape(const Specs& in, const Attrs& a) {
  return {{slice_window(in.at(0).shape, a.get_ints("begin"), a.get_ints("size")).second, in[0].dtype}};
}

// slice_grad(g; shape, begin): zeros of `shape` with g placed at `begin`.
Specs slice_grad_shape(const Specs& in, const Attrs& a) {
  const Shape& full = a.get_ints("shape");
  slice_window(full, a.get_ints("begin"), in.at(0).shape);
  return {{full, in[0].dtype}};
}

Specs take_shape(const Specs& in, const Attrs& a) {
  const Shape& x = in.at(0).shape;
  require_index_dtype("take", in.at(1).dtype, "indices");
  if (x.empty()) fail<ShapeError>("take", "a tensor of rank >= 1", "a scalar", "Nothing to take from.");
  size_t axis = static_cast<size_t>(normalize_axis(a.get_int("axis"), static_cast<int64_t>(x.size()), "take"));
  Shape out(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(axis));
  out.insert(out.end(), in[1].shape.begin(), in[1].shape.end());
  out.insert(out.end(), x.begin() + static_cast<std::ptrdiff_t>(axis) + 1, x.end());
  return {{out, in[0].dtype}};
}

// take_grad(g, indices; axis, shape): zeros of `shape`, g's slices added at the indexed rows.
Specs take_grad_shape(const Specs& in, const Attrs& a) {
  if (in.at(0).dtype == DType::boolean) fail<TypeError>("take_grad", "a numeric gradient", "bool");
  const Shape& full = a.get_ints("shape");
  Specs expect = take_shape({{full, in[0].dtype}, in.at(1)}, a);
  if (expect[0].shape != in[0].shape)
    fail<ShapeError>("take_grad", "gradient of shape " + shape_str(expect[0].shape), shape_str(in[0].shape));
  return {{full, in[0].dtype}};
}

Specs one_hot_shape(const Specs& in, const Attrs& a) {
  require_index_dtype("one_hot", in.at(0).dtype, "labels");
  int64_t n = a.get_int("num_classes");
  if (n < 1) fail<ValueError>("one_hot", "num_classes >= 1", std::to_string(n));
  Shape out = in[0].shape;
  out.push_back(n);
  return {{out, static_cast<DType>(a.get_int("dtype"))}};
}

Specs expand_dims_spec(const Specs& in, const Attrs& a) { return {{expand_dims_shape(in.at(0).shape, a.get_int("axis")), in[0].dtype}}; }
Specs squeeze_spec(const Specs& in, const Attrs& a) { return {{squeeze_shape(in.at(0).shape, a.get_int("axis")), in[0].dtype}}; }

// Views need no device code: one kernel re-describes the input for every device kind.
void set_view_kernel(OpDef& def, Shape (*out_shape)(const Tensor&, const Attrs&)) {
  def.kernel_allocates = true;
  def.half_native = true;
  for (auto& k : def.kernels)
    k = [out_shape](const TensorList& in, TensorList& out, const Attrs& a) { out = {in[0].view(out_shape(in[0], a))}; };
}

// The gradient of a view op reshapes back to the input's shape.
TensorList reshape_back(const GradContext& g) {
  if (!g.needs_grad[0]) return {Tensor()};
  return {ops::reshape(g.grad_outputs[0], g.input_specs[0].shape)};
}

Attrs slice_attrs(const std::vector<int64_t>& begin, const std::vector<int64_t>& size) {
  return Attrs{{"begin", begin}, {"size", size}};
}

}  // namespace

KERAS_REGISTER_OP(reshape) {
  def.shape = reshape_shape;
  def.grad = reshape_back;
  set_view_kernel(def, [](const Tensor& x, const Attrs& a) { return reshape_target(x.shape(), a.get_ints("shape")); });
}

KERAS_REGISTER_OP(expand_dims) {
  def.shape = expand_dims_spec;
  def.grad = reshape_back;
  set_view_kernel(def, [](const Tensor& x, const Attrs& a) { return expand_dims_shape(x.shape(), a.get_int("axis")); });
}

KERAS_REGISTER_OP(squeeze) {
  def.shape = squeeze_spec;
  def.grad = reshape_back;
  set_view_kernel(def, [](const Tensor& x, const Attrs& a) { return squeeze_shape(x.shape(), a.get_int("axis")); });
}

KERAS_REGISTER_OP(transpose) {
  def.shape = transpose_shape;
  def.grad = [](const GradContext& g) -> TensorList {
    if (!g.needs_grad[0]) return {Tensor()};
    auto perm = normalize_perm(g.attrs.get_ints("perm"), g.input_specs[0].shape.size());
    std::vector<int> inverse(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int>(i);
    return {ops::transpose(g.grad_outputs[0], inverse)};
  };
}

KERAS_REGISTER_OP(concatenate) {
  def.shape = concatenate_shape;
  def.grad = [](const GradContext& g) {
    const Shape& out = g.output_specs[0].shape;
    size_t axis = static_cast<size_t>(normalize_axis(g.attrs.get_int("axis"), static_cast<int64_t>(out.size()), "concatenate"));
    TensorList grads(g.input_specs.size());
    int64_t offset = 0;
    for (size_t i = 0; i < grads.size(); ++i) {
      const Shape& s = g.input_specs[i].shape;
      if (g.needs_grad[i]) {
        std::vector<int64_t> begin(out.size(), 0);
        begin[axis] = offset;
        grads[i] = ops::slice(g.grad_outputs[0], begin, s);
      }
      offset += s[axis];
    }
    return grads;
  };
}

KERAS_REGISTER_OP(slice) {
  def.shape = slice_shape;
  def.grad = [](const GradContext& g) -> TensorList {
    if (!g.needs_grad[0]) return {Tensor()};
    static const OpDef& pad = OpRegistry::instance().find("slice_grad");
    auto [begin, size] = slice_window(g.input_specs[0].shape, g.attrs.get_ints("begin"), g.attrs.get_ints("size"));
    return {run_op1(pad, {g.grad_outputs[0]}, Attrs{{"shape", g.input_specs[0].shape}, {"begin", begin}})};
  };
}

KERAS_REGISTER_OP(slice_grad) {
  def.shape = slice_grad_shape;
  def.grad = [](const GradContext& g) -> TensorList {
    if (!g.needs_grad[0]) return {Tensor()};
    return {ops::slice(g.grad_outputs[0], g.attrs.get_ints("begin"), g.input_specs[0].shape)};
  };
}

KERAS_REGISTER_OP(take) {
  def.shape = take_shape;
  def.save = SaveInputs;  // the indices; x is kept only as a detached handle
  def.grad = [](const GradContext& g) -> TensorList {
    if (!g.needs_grad[0]) return {Tensor(), Tensor()};
    static const OpDef& scatter = OpRegistry::instance().find("take_grad");
    int64_t axis = normalize_axis(g.attrs.get_int("axis"), static_cast<int64_t>(g.input_specs[0].shape.size()), "take");
    return {run_op1(scatter, {g.grad_outputs[0], g.input(1)}, Attrs{{"axis", axis}, {"shape", g.input_specs[0].shape}}),
            Tensor()};
  };
}

KERAS_REGISTER_OP(take_grad) {
  def.shape = take_grad_shape;
  def.save = SaveInputs;
  def.grad = [](const GradContext& g) -> TensorList {
    if (!g.needs_grad[0]) return {Tensor(), Tensor()};
    return {ops::take(g.grad_outputs[0], g.input(1), static_cast<int>(g.attrs.get_int("axis"))), Tensor()};
  };
}

KERAS_REGISTER_OP(one_hot) { def.shape = one_hot_shape; }

namespace ops {

Tensor reshape(const Tensor& x, const Shape& shape) {
  static const OpDef& def = OpRegistry::instance().find("reshape");
  return run_op1(def, {x}, Attrs{{"shape", shape}});
}

Tensor transpose(const Tensor& x, const std::vector<int>& perm) {
  static const OpDef& def = OpRegistry::instance().find("transpose");
  std::vector<int64_t> p(perm.begin(), perm.end());
  if (p.empty()) {
    p.resize(static_cast<size_t>(x.rank()));
    std::iota(p.rbegin(), p.rend(), int64_t{0});
  }
  return run_op1(def, {x}, Attrs{{"perm", p}});
}

Tensor concatenate(const TensorList& xs, int axis) {
  static const OpDef& def = OpRegistry::instance().find("concatenate");
  return run_op1(def, xs, Attrs{{"axis", static_cast<int64_t>(axis)}});
}

Tensor slice(const Tensor& x, const std::vector<int64_t>& begin, const std::vector<int64_t>& size) {
  static const OpDef& def = OpRegistry::instance().find("slice");
  return run_op1(def, {x}, slice_attrs(begin, size));
}

Tensor take(const Tensor& x, const Tensor& indices, int axis) {
  static const OpDef& def = OpRegistry::instance().find("take");
  return run_op1(def, {x, indices}, Attrs{{"axis", static_cast<int64_t>(axis)}});
}

Tensor one_hot(const Tensor& indices, int64_t num_classes, DType dtype) {
  static const OpDef& def = OpRegistry::instance().find("one_hot");
  return run_op1(def, {indices}, Attrs{{"num_classes", num_classes}, {"dtype", static_cast<int64_t>(dtype)}});
}

Tensor expand_dims(const Tensor& x, int axis) {
  static const OpDef& def = OpRegistry::instance().find("expand_dims");
  return run_op1(def, {x}, Attrs{{"axis", static_cast<int64_t>(axis)}});
}

Tensor squeeze(const Tensor& x, int axis) {
  static const OpDef& def = OpRegistry::instance().find("squeeze");
  return run_op1(def, {x}, Attrs{{"axis", static_cast<int64_t>(axis)}});
}

}  // namespace ops
}  // namespace keras
