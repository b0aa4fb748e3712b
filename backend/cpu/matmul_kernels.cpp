// CPU kernels of matmul and dense: oneDNN matmul for float32 and bfloat16 (cached primitives,
// transposes expressed as strides, bias and activation fused as post-ops), the project's own GEMMs
// for float32 products where the kernel chooser timed them faster (dense_panels.h, gemm_direct.h),
// and plain loops for float64. The plain-loop references for tests live at the end of the file.
#include <cmath>
#include <type_traits>

#include "backend/autodiff.h"
#include "backend/bf16_compute.h"
#include "backend/cpu/dense_panels.h"
#include "backend/cpu/dnnl_context.h"
#include "backend/cpu/gemm_direct.h"
#include "backend/cpu/reference_linalg.h"
#include "backend/cpu/weight_cache.h"
#include "backend/op_registry.h"

namespace keras {
namespace {

using dnnl::memory;
using Dims = memory::dims;

// A logical (batch..., rows, cols) operand stored row-major as (batch..., rows, cols), or as
// (batch..., cols, rows) when transposed: the descriptor's strides say which.
struct Operand {
  Dims dims, strides;
};

Operand make_operand(const Shape& batch, int64_t rows, int64_t cols, bool transposed) {
  Operand op;
  op.dims.assign(batch.begin(), batch.end());
  op.dims.push_back(rows);
  op.dims.push_back(cols);
  op.strides.resize(op.dims.size());
  size_t r = op.dims.size();
  op.strides[r - 1] = transposed ? rows : 1;
  op.strides[r - 2] = transposed ? 1 : cols;
  int64_t s = rows * cols;
  for (size_t i = r - 2; i-- > 0;) {
    op.strides[i] = s;
    s *= op.dims[i];
  }
  return op;
}

// The layout a descriptor names, exactly: data type, dims with their padding and strides, inner blocks.
std::string layout_key(const memory::desc& md) {
  const dnnl_memory_desc_t& d = md.data;
  cpu::KeyBuilder k("layout");
  k.add(static_cast<int64_t>(d.data_type)).add(static_cast<int64_t>(d.format_kind));
  const auto& blocking = d.format_desc.blocking;
  for (int i = 0; i < d.ndims; ++i)
    k.add(static_cast<int64_t>(d.dims[i])).add(static_cast<int64_t>(d.padded_dims[i])).add(static_cast<int64_t>(blocking.strides[i]));
  for (int i = 0; i < blocking.inner_nblks; ++i)
    k.add(static_cast<int64_t>(blocking.inner_blks[i])).add(static_cast<int64_t>(blocking.inner_idxs[i]));
  return k.add(static_cast<int64_t>(d.extra.flags)).str();
}

struct MatmulEntry {
  dnnl::matmul prim;
  memory::desc a, b, bias, c;
  // For a weight b: the primitive taking b in oneDNN's blocked layout, used while b is unchanged.
  dnnl::matmul prim_blocked;
  memory::desc b_blocked;
  std::string b_key;  // the weight cache's key of that layout; empty: no blocked primitive
};

// Runs dst = op(a) @ op(b) [+ bias] [then activation] through a cached oneDNN primitive.
// `bias` may be null; its descriptor is (1, ..., 1, cols).
// Every operand has data type `dt` (f32, or bf16 for the bf16 kernels; oneDNN accumulates in f32).
// `b_tensor`, when given, is the tensor at `pb` and a layer's weights: while they are unchanged
// between calls (inference), b goes to the primitive in oneDNN's blocked layout, reordered once
// (weight_cache.h), which spares oneDNN's brgemm the copy of b it makes from a plain layout on
// every call (8-16% of a 128x784x512 product on AVX-512).
void onednn_matmul(const Operand& a, const Operand& b, const Dims& c_dims, const void* pa, const void* pb,
                   const void* pbias, void* pc, const std::string& act,
                   memory::data_type dt = memory::data_type::f32, const Tensor* b_tensor = nullptr) {
  cpu::KeyBuilder key("matmul");
  key.add(static_cast<int64_t>(dt));
  key.add(Shape(a.dims)).add(Shape(a.strides)).add(Shape(b.dims)).add(Shape(b.strides)).add(Shape(c_dims));
  key.add(static_cast<int64_t>(pbias != nullptr)).add(act).add(static_cast<int64_t>(b_tensor != nullptr));
  auto entry = cpu::primitive_cache().get<MatmulEntry>(key.str(), [&] {
    auto e = std::make_shared<MatmulEntry>();
    e->a = memory::desc(a.dims, dt, a.strides);
    e->b = memory::desc(b.dims, dt, b.strides);
    Shape cs = contiguous_strides(Shape(c_dims));
    e->c = memory::desc(c_dims, dt, Dims(cs.begin(), cs.end()));
    if (pbias) {
      Dims bd(c_dims.size(), 1);
      bd.back() = c_dims.back();
      Shape bs = contiguous_strides(Shape(bd));
      e->bias = memory::desc(bd, dt, Dims(bs.begin(), bs.end()));
    }
    auto make = [&](const memory::desc& bd) {
      auto d = pbias ? dnnl::matmul::desc(e->a, bd, e->bias, e->c) : dnnl::matmul::desc(e->a, bd, e->c);
      return dnnl::matmul::primitive_desc(d, cpu::activation_attr("dense", act), cpu::dnnl_engine());
    };
    try {
      e->prim = dnnl::matmul(make(e->b));
    } catch (const dnnl::error& err) {
      fail<NotImplementedError>("matmul (oneDNN)", "a problem oneDNN supports", key.str() + " (" + err.what() + ")");
    }
    if (b_tensor) {
      try {  // without a blocked primitive the plain one serves
        auto pd = make(memory::desc(b.dims, dt, memory::format_tag::any));
        e->b_blocked = pd.weights_desc();
        e->prim_blocked = dnnl::matmul(pd);
        // One blocked copy per weight and layout, whatever the row count of the call.
        e->b_key = cpu::KeyBuilder("matmul_weights").add(static_cast<int64_t>(dt)).add(Shape(b.dims)).add(Shape(b.strides))
                       .add(layout_key(e->b_blocked)).str();
      } catch (const dnnl::error&) {
        e->b_key.clear();
      }
    }
    return e;
  });
  auto& eng = cpu::dnnl_engine();
  memory blocked_b;
  if (b_tensor && !entry->b_key.empty())
    blocked_b = cpu::prepared_weights_if_stable(*b_tensor, entry->b, entry->b_blocked, entry->b_key);
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, memory(entry->a, eng, const_cast<void*>(pa))},
      {DNNL_ARG_WEIGHTS, blocked_b ? blocked_b : memory(entry->b, eng, const_cast<void*>(pb))},
      {DNNL_ARG_DST, memory(entry->c, eng, pc)}};
  if (pbias) args.emplace(DNNL_ARG_BIAS, memory(entry->bias, eng, const_cast<void*>(pbias)));
  cpu::execute(blocked_b ? entry->prim_blocked : entry->prim, args);
  cpu::dnnl_stream().wait();
}

// Plain-loop product of one (rows x inner) @ (inner x cols) problem.
template <class T>
void gemm_loop(const T* a, const T* b, T* c, int64_t m, int64_t k, int64_t n, bool ta, bool tb) {
  for (int64_t i = 0; i < m; ++i) {
    T* crow = c + i * n;
    if (tb) {
      for (int64_t j = 0; j < n; ++j) {
        T s = 0;
        for (int64_t p = 0; p < k; ++p) s += (ta ? a[p * m + i] : a[i * k + p]) * b[j * k + p];
        crow[j] = s;
      }
    } else {
      for (int64_t j = 0; j < n; ++j) crow[j] = 0;
      for (int64_t p = 0; p < k; ++p) {
        T av = ta ? a[p * m + i] : a[i * k + p];
        const T* brow = b + p * n;
        for (int64_t j = 0; j < n; ++j) crow[j] += av * brow[j];
      }
    }
  }
}

// Batch offsets (in matrices) of a and b for each output batch index, with broadcasting.
void batch_offsets(const Shape& ab, const Shape& bb, const Shape& cb, std::vector<int64_t>& oa,
                   std::vector<int64_t>& ob) {
  int64_t total = shape_numel(cb);
  oa.assign(static_cast<size_t>(total), 0);
  ob.assign(static_cast<size_t>(total), 0);
  Shape sa = contiguous_strides(ab), sb = contiguous_strides(bb);
  std::vector<int64_t> idx(cb.size(), 0);
  for (int64_t t = 0; t < total; ++t) {
    int64_t x = 0, y = 0;
    for (size_t d = 0; d < cb.size(); ++d) {
      if (ab[d] != 1) x += idx[d] * sa[d];
      if (bb[d] != 1) y += idx[d] * sb[d];
    }
    oa[static_cast<size_t>(t)] = x;
    ob[static_cast<size_t>(t)] = y;
    for (size_t d = cb.size(); d-- > 0;)
      if (++idx[d] < cb[d]) break;
      else idx[d] = 0;
  }
}

Shape batch_of(const Shape& s, size_t rank) {
  Shape b(rank - s.size(), 1);
  b.insert(b.end(), s.begin(), s.end() - 2);
  return b;
}

void matmul_kernel(const TensorList& in, TensorList& out, const Attrs& attrs) {
  const Tensor& a = in[0];
  const Tensor& b = in[1];
  Tensor& c = out[0];
  bool ta = attrs.get_bool("transpose_a", false), tb = attrs.get_bool("transpose_b", false);
  const Shape& cs = c.shape();
  size_t rank = cs.size();
  int64_t m = cs[rank - 2], n = cs[rank - 1];
  int64_t k = ta ? a.shape()[a.rank() - 2] : a.shape().back();
  if (c.numel() == 0) return;
  if (k == 0) {
    c.fill_(0);
    return;
  }
  Shape ab = batch_of(a.shape(), rank), bb = batch_of(b.shape(), rank), cb(cs.begin(), cs.end() - 2);
  if (a.dtype() == DType::float32 || a.dtype() == DType::bfloat16) {
    const auto dt = cpu::dnnl_dtype(a.dtype());
    // One product: every batch matrix of a meets the same b (the batch folded into a's rows), or
    // no batch. A float32 one with b as it lies runs by the project's GEMM or oneDNN's, as timed
    // (gemm_direct.h).
    if (shape_numel(bb) == 1 && (!ta || shape_numel(cb) == 1)) {
      const int64_t rows = shape_numel(cb) * m;
      auto onednn = [&] {
        onednn_matmul(make_operand({}, rows, k, ta), make_operand({}, k, n, tb), {rows, n}, a.raw_data(), b.raw_data(),
                      nullptr, c.raw_data(), "linear", dt);
      };
      if (a.dtype() != DType::float32 || tb ||
          !cpu::run_gemm_chosen("matmul", {rows, n, k, a.data<float>(), ta, b.data<float>(), c.data<float>()}, onednn))
        onednn();
    } else {
      if (ab == bb && ab.size() > 1) ab = bb = cb = Shape{shape_numel(cb)};  // no broadcast: one batch axis
      Dims cd(cb.begin(), cb.end());
      cd.push_back(m);
      cd.push_back(n);
      onednn_matmul(make_operand(ab, m, k, ta), make_operand(bb, k, n, tb), cd, a.raw_data(), b.raw_data(), nullptr,
                    c.raw_data(), "linear", dt);
    }
    return;
  }
  if (a.dtype() != DType::float64)
    fail<TypeError>("matmul (cpu)", "float32 or float64", dtype_name(a.dtype()));
  std::vector<int64_t> oa, ob;
  batch_offsets(ab, bb, cb, oa, ob);
  const double* pa = a.data<double>();
  const double* pb = b.data<double>();
  double* pc = c.data<double>();
  for (size_t t = 0; t < oa.size(); ++t)
    gemm_loop(pa + oa[t] * m * k, pb + ob[t] * k * n, pc + static_cast<int64_t>(t) * m * n, m, k, n, ta, tb);
}

template <class T>
T apply_activation(const std::string& act, T z) {
  if (act == "relu") return z > 0 ? z : T(0);
  if (act == "sigmoid") return T(1) / (T(1) + std::exp(-z));
  if (act == "tanh") return std::tanh(z);
  if (act == "elu") return z > 0 ? z : std::expm1(z);
  if (act == "gelu") return T(0.5) * z * (T(1) + std::erf(z / std::sqrt(T(2))));
  if (act == "swish") return z / (T(1) + std::exp(-z));
  return z;
}

template <class T>
void dense_loop(const T* x, const T* w, const T* bias, T* y, int64_t rows, int64_t in, int64_t units,
                const std::string& act) {
  gemm_loop(x, w, y, rows, in, units, false, false);
  for (int64_t r = 0; r < rows; ++r) {
    T* yr = y + r * units;
    if (bias)
      for (int64_t j = 0; j < units; ++j) yr[j] += bias[j];
    if (act != "linear")
      for (int64_t j = 0; j < units; ++j) yr[j] = apply_activation(act, yr[j]);
  }
}

void dense_kernel(const TensorList& in, TensorList& out, const Attrs& attrs) {
  const Tensor& x = in[0];
  const Tensor& w = in[1];
  bool has_bias = in.size() > 2;
  Tensor& y = out[0];
  const std::string& act = attrs.get_string("activation");
  int64_t k = w.dim(0), units = w.dim(1);
  int64_t rows = units == 0 ? 0 : y.numel() / units;
  if (y.numel() == 0) return;
  if ((x.dtype() == DType::float32 || x.dtype() == DType::bfloat16) && k > 0) {
    const auto dt = cpu::dnnl_dtype(x.dtype());
    // Float32 weights are the layer's variables, worth keeping packed; bfloat16 ones are a fresh
    // cast of them on every call (mixed policies), which a cache would only reorder once more.
    const bool packed = x.dtype() == DType::float32;
    auto onednn = [&] {
      onednn_matmul(make_operand({}, rows, k, false), make_operand({}, k, units, false), {rows, units}, x.raw_data(),
                    w.raw_data(), has_bias ? in[2].raw_data() : nullptr, y.raw_data(), act, dt, packed ? &w : nullptr);
    };
    // Float32: in inference the project's panel kernels or oneDNN, as timed (dense_panels.h); in a
    // training step, whose weight is new at every step, its GEMM on the weight as it lies or
    // oneDNN, as timed (gemm_direct.h).
    const float* bias = packed && has_bias ? in[2].data<float>() : nullptr;
    bool done = false;
    if (packed && grad_recording()) {
      const cpu::DirectGemm g{rows, units, k, x.data<float>(), false, w.data<float>(), y.data<float>(), bias, act == "relu"};
      done = (act == "linear" || act == "relu") && cpu::run_gemm_chosen("dense_train", g, onednn);
    } else if (packed) {
      done = cpu::run_dense_chosen(x, w, bias, y, rows, act, onednn);
    }
    if (!done) onednn();
    return;
  }
  if (x.dtype() == DType::bfloat16) {  // k == 0: the bias (and activation) alone, as float32 does it
    run_bf16_in_float32(dense_kernel, in, out, attrs);
    return;
  }
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      dense_loop<T>(x.data<T>(), w.data<T>(), has_bias ? in[2].data<T>() : nullptr, y.data<T>(), rows, k, units, act);
    } else {
      fail<TypeError>("dense (cpu)", "float32 or float64", dtype_name(x.dtype()));
    }
  });
}

}  // namespace

KERAS_REGISTER_KERNEL(matmul, cpu, matmul_kernel);
KERAS_REGISTER_KERNEL(dense, cpu, dense_kernel);
// The same kernels take bfloat16 (see backend/bf16_compute.h).
KERAS_REGISTER_BF16_KERNEL(matmul, cpu, matmul_kernel);
KERAS_REGISTER_BF16_KERNEL(dense, cpu, dense_kernel);

// ---- references (tests only): naive index arithmetic, accumulation in double ----
namespace cpu {

Tensor reference_matmul(const Tensor& a_in, const Tensor& b_in, bool ta, bool tb) {
  Tensor a = a_in.contiguous(), b = b_in.contiguous();
  size_t ra = a.shape().size(), rb = b.shape().size();
  int64_t m = ta ? a.shape()[ra - 1] : a.shape()[ra - 2], k = ta ? a.shape()[ra - 2] : a.shape()[ra - 1];
  int64_t n = tb ? b.shape()[rb - 2] : b.shape()[rb - 1];
  Shape cb = broadcast_shapes(Shape(a.shape().begin(), a.shape().end() - 2), Shape(b.shape().begin(), b.shape().end() - 2),
                              "reference_matmul");
  size_t rank = cb.size() + 2;
  Shape ab = batch_of(a.shape(), rank), bb = batch_of(b.shape(), rank);
  std::vector<int64_t> oa, ob;
  batch_offsets(ab, bb, cb, oa, ob);
  Shape cs = cb;
  cs.push_back(m);
  cs.push_back(n);
  Tensor c = Tensor::empty(cs, a.dtype());
  std::vector<double> vals(static_cast<size_t>(c.numel()));
  for (size_t t = 0; t < oa.size(); ++t)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) {
          int64_t ia = oa[t] * m * k + (ta ? p * m + i : i * k + p);
          int64_t ib = ob[t] * k * n + (tb ? j * k + p : p * n + j);
          s += element_as_double(a, ia) * element_as_double(b, ib);
        }
        vals[t * m * n + i * n + j] = s;
      }
  dispatch_dtype(c.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < vals.size(); ++i) c.data<T>()[i] = static_cast<T>(vals[i]);
  });
  return c;
}

Tensor reference_dense(const Tensor& x, const Tensor& kernel, const Tensor& bias, const std::string& activation) {
  int64_t in = kernel.shape()[0], units = kernel.shape()[1];
  int64_t rows = in == 0 ? 0 : x.numel() / in;
  Tensor y2 = reference_matmul(x.contiguous().view({rows, in}), kernel, false, false);
  Shape ys(x.shape().begin(), x.shape().end() - 1);
  ys.push_back(units);
  Tensor bc = bias.defined() ? bias.contiguous() : Tensor();
  dispatch_dtype(y2.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* p = y2.data<T>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < units; ++j) {
        double z = static_cast<double>(p[r * units + j]) + (bc.defined() ? element_as_double(bc, j) : 0.0);
        p[r * units + j] = static_cast<T>(apply_activation<double>(activation, z));
      }
  });
  return y2.view(ys);
}

}  // namespace cpu
}  // namespace keras
