// CUDA kernels of conv2d, conv2d_backward_data and conv2d_backward_weights (definitions and
// contracts: backend/ops_conv.h), float32 and float64, on cuDNN (cudnn.h).
//
// Layouts: activations stay NHWC (CUDNN_TENSOR_NHWC); the Keras kernel (kh, kw, C/groups, O) is
// gathered into cuDNN's KRSC filter layout (O, kh, kw, C/groups) for each call, and the weight
// gradient gathered back. cuDNN pads symmetrically: per axis it gets min(before, after); the
// rest (TF "same" with an odd total, causal pads) is made by copying x into a zero-padded
// scratch, only as far as the output grid actually reaches, and backward-data computes into such
// a scratch and crops it. Bias, the fused activation (linear, relu, relu6, sigmoid, tanh, elu,
// gelu, swish: every one the CPU kernel fuses) and conv2d_transpose's bias run as one pass of
// kernels::bias_activation afterwards; the bias gradient is a column sum of dy.
//
// Algorithms: chosen once per problem (every extent, stride, pad, dilation, groups, dtype,
// device, math mode and the determinism switch) and cached with the problem's cuDNN descriptors,
// so that a later call creates none: cudnnFind*AlgorithmEx (timed, on
// the call's own buffers and a workspace of the largest size any algorithm asks, up to 1 GiB)
// normally; cuDNN's heuristics (cudnnGet*Algorithm_v7) restricted to deterministic algorithms
// under cuda::set_deterministic(true), so that the choice does not depend on timings. float32
// runs CUDNN_TENSOR_OP_MATH (TF32) while cuda::allow_tf32() (the default, read once per call),
// else CUDNN_FMA_MATH (exact float32); float64 runs cuDNN's default math (its tensor cores,
// where used, are IEEE double). KERAS_CUDA_CONV_HOST_TIMES=1 times the host's stages
// (conv_host_times.h).
//
// Problems cuDNN declines (a NOT_SUPPORTED status, no algorithm fitting, no deterministic one,
// a tensor of 2^31 elements or more) run the direct kernels of conv_kernels.cu instead, which
// are exact-order double-accumulating loops; cuda::set_conv_force_direct(true) forces them.
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <unordered_map>

#include "backend/cuda.h"
#include "backend/cuda/conv_host_times.h"
#include "backend/cuda/conv_pool_kernels.h"
#include "backend/cuda/cudnn.h"
#include "backend/cuda/indexing.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/runtime.h"
#include "backend/cuda/op_checks.h"
#include "backend/op_registry.h"
#include "backend/ops_conv.h"

namespace keras {
namespace {

using cuda::require_float;
using cuda::require_numeric;
using cuda::stream_of;

namespace k = cuda::kernels;
using cuda::conv_host_times::Stage;
using cuda::conv_host_times::Timer;

// ---------------- geometry ----------------

struct Problem {
  k::ConvGeom g;
  int64_t pad_b = 0, pad_r = 0;
  DType dtype = DType::float32;
  int device = 0;
  bool tf32 = false;  // float32 in TF32 (cuda::allow_tf32(), read once per call)
};

Problem make_problem(const Shape& xs, const Shape& ks, const Shape& ys, const ConvParams& p, DType dtype, int device) {
  Problem pr;
  k::ConvGeom& g = pr.g;
  g.n = xs[0], g.h = xs[1], g.w = xs[2], g.c = xs[3];
  g.oh = ys[1], g.ow = ys[2], g.o = ys[3];
  g.kh = ks[0], g.kw = ks[1], g.cg = ks[2], g.groups = p.groups;
  g.sh = p.stride_h, g.sw = p.stride_w, g.dh = p.dilation_h, g.dw = p.dilation_w;
  g.pad_t = p.pad_top, g.pad_l = p.pad_left;
  pr.pad_b = p.pad_bottom, pr.pad_r = p.pad_right;
  pr.dtype = dtype, pr.device = device;
  pr.tf32 = dtype == DType::float32 && cuda::allow_tf32();
  return pr;
}

// cuDNN's view of the problem: symmetric pads `sym`, and x as a scratch (n, hs, ws, c) holding x
// at (pre_h, pre_w) when the pads are not symmetric enough.
struct Plan {
  int64_t sym_h = 0, sym_w = 0, pre_h = 0, pre_w = 0, hs = 0, ws = 0;
  bool padded = false;
};

void plan_axis(int64_t in, int64_t before, int64_t after, int64_t out, int64_t k, int64_t stride, int64_t dilation,
               int64_t& sym, int64_t& pre, int64_t& extent) {
  sym = std::min(before, after);
  pre = before - sym;
  // The padded extent the output grid reads; the after-pad beyond it is never touched.
  const int64_t reach = (out - 1) * stride + dilation * (k - 1) + 1;
  const int64_t post = std::max<int64_t>(0, reach - (pre + in + 2 * sym));
  extent = in + pre + post;
}

Plan make_plan(const Problem& pr) {
  const k::ConvGeom& g = pr.g;
  Plan pl;
  plan_axis(g.h, g.pad_t, pr.pad_b, g.oh, g.kh, g.sh, g.dh, pl.sym_h, pl.pre_h, pl.hs);
  plan_axis(g.w, g.pad_l, pr.pad_r, g.ow, g.kw, g.sw, g.dw, pl.sym_w, pl.pre_w, pl.ws);
  pl.padded = pl.pre_h || pl.pre_w || pl.hs != g.h || pl.ws != g.w;
  return pl;
}

// cuDNN's legacy API indexes with int: larger tensors take the direct kernels.
bool fits_cudnn(const Problem& pr, const Plan& pl) {
  const k::ConvGeom& g = pr.g;
  const int64_t sizes[] = {g.n * pl.hs * pl.ws * g.c, g.n * g.oh * g.ow * g.o, g.kh * g.kw * g.cg * g.o};
  for (int64_t s : sizes)
    if (s >= INT_MAX) return false;
  return true;
}

// ---------------- the algorithm cache ----------------

enum class Dir : int { forward, backward_data, backward_filter };
const char* dir_name(Dir d) {
  return d == Dir::forward ? "conv2d" : d == Dir::backward_data ? "conv2d_backward_data" : "conv2d_backward_weights";
}

struct Algo {
  bool usable = false;  // false: cuDNN declined the problem, the direct kernels run it
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;  // the math the algorithm runs with
  size_t workspace = 0;
};

struct Descs;
// One problem's choice and cuDNN's descriptors of it (math set for the algorithm), made on the
// first call and shared by every later one: creating and setting four descriptors cost the host
// ~12 us a call (measured on this project's 2-core Xeon), a tenth of a convolution's issue time.
struct AlgoEntry {
  Algo algo;
  std::shared_ptr<const Descs> descs;  // null when the algorithm is not usable
};

struct AlgoCache {
  std::mutex mutex;
  std::unordered_map<std::string, AlgoEntry> entries;
  std::atomic<uint64_t> cudnn_runs{0}, direct_runs{0}, searches{0};
};

AlgoCache& algo_cache() {
  static AlgoCache* cache = new AlgoCache;  // never destroyed: kernels may run during exit
  return *cache;
}

// The math type the search is asked with.
cudnnMathType_t requested_math(const Problem& pr) {
  if (pr.dtype != DType::float32) return CUDNN_DEFAULT_MATH;
  return pr.tf32 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
}

std::string key_of(Dir dir, const Problem& pr, const Plan& pl) {
  const k::ConvGeom& g = pr.g;
  std::string key = std::to_string(static_cast<int>(dir)) + ";" + dtype_name(pr.dtype) + ";cuda:" +
                    std::to_string(pr.device);
  for (int64_t v : {g.n, pl.hs, pl.ws, g.c, g.oh, g.ow, g.o, g.kh, g.kw, g.cg, g.groups, g.sh, g.sw, g.dh, g.dw,
                    pl.sym_h, pl.sym_w})
    key += "," + std::to_string(v);
  key += pr.tf32 ? ";tf32" : ";exact";
  key += cuda::deterministic() ? ";deterministic" : ";any";
  return key;
}

// cuDNN's descriptors of one problem in its cuDNN view.
struct Descs {
  cuda::TensorDesc x, y;  // x: the (possibly padded) input; y: the output
  cuda::FilterDesc w;
  cuda::ConvolutionDesc conv;
};

void describe(Descs& d, const Problem& pr, const Plan& pl, cudnnMathType_t math) {
  const k::ConvGeom& g = pr.g;
  const cudnnDataType_t t = cuda::cudnn_dtype(pr.dtype, "conv2d (cuda)");
  d.x.set_nhwc(t, g.n, pl.hs, pl.ws, g.c);
  d.y.set_nhwc(t, g.n, g.oh, g.ow, g.o);
  d.w.set_krsc(t, g.o, g.kh, g.kw, g.cg);
  d.conv.set(pl.sym_h, pl.sym_w, g.sh, g.sw, g.dh, g.dw, g.groups, t);
  d.conv.set_math(math);
  int n = 0, c = 0, h = 0, w = 0;
  cuda::check_cudnn(cuda::cudnn().get_convolution_2d_forward_output_dim(d.conv.get(), d.x.get(), d.w.get(), &n, &c,
                                                                        &h, &w),
                    "cudnnGetConvolution2dForwardOutputDim");
  if (n != g.n || c != g.o || h != g.oh || w != g.ow)
    fail<DeviceError>("conv2d (cuda)", "cuDNN's output extents (" + std::to_string(g.n) + ", " + std::to_string(g.oh) +
                                           ", " + std::to_string(g.ow) + ", " + std::to_string(g.o) + ")",
                      "(" + std::to_string(n) + ", " + std::to_string(h) + ", " + std::to_string(w) + ", " +
                          std::to_string(c) + ")");
}

bool not_supported(cudnnStatus_t s) { return CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_NOT_SUPPORTED; }

constexpr size_t kSearchWorkspaceLimit = size_t{1} << 30;

// Device scratch of at least `bytes` (undefined for 0).
Tensor scratch_bytes(size_t bytes, int device) {
  if (bytes == 0) return Tensor();
  return Tensor::empty({static_cast<int64_t>((bytes + 7) / 8)}, DType::int64, Device::cuda(device));
}
void* ptr(Tensor& t) { return t.defined() ? t.raw_data() : nullptr; }

// The first usable result: success, fitting the workspace, deterministic when asked.
template <class Perf>
const Perf* pick(const Perf* perf, int n, size_t limit, bool need_deterministic) {
  for (int i = 0; i < n; ++i) {
    const Perf& r = perf[i];
    if (r.status != CUDNN_STATUS_SUCCESS || r.memory > limit) continue;
    if (need_deterministic && r.determinism != CUDNN_DETERMINISTIC) continue;
    return &r;
  }
  return nullptr;
}

// Per-direction calls, so that one search routine serves all three.
// a, b, out: forward x, w, y; backward data dy, w, dx; backward filter x, dy, dw.
struct DirectionCalls {
  Dir dir;
  cudnnHandle_t h;
  const Descs& d;

  cudnnStatus_t workspace_size(int algo, size_t* bytes) const {
    const cuda::CudnnApi& api = cuda::cudnn();
    switch (dir) {
      case Dir::forward:
        return api.forward_workspace_size(h, d.x.get(), d.w.get(), d.conv.get(), d.y.get(),
                                          static_cast<cudnnConvolutionFwdAlgo_t>(algo), bytes);
      case Dir::backward_data:
        return api.backward_data_workspace_size(h, d.w.get(), d.y.get(), d.conv.get(), d.x.get(),
                                                static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), bytes);
      case Dir::backward_filter:
        return api.backward_filter_workspace_size(h, d.x.get(), d.y.get(), d.conv.get(), d.w.get(),
                                                  static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), bytes);
    }
    return CUDNN_STATUS_BAD_PARAM;
  }

  int algo_count() const {
    switch (dir) {
      case Dir::forward: return CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
      case Dir::backward_data: return CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
      case Dir::backward_filter: return CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
    }
    return 0;
  }

  // Runs the search (find: timed FindEx with `ws`; else the v7 heuristics) and picks.
  template <class Perf, class Find, class Heuristic>
  Algo search(bool find, Tensor& ws, size_t ws_bytes, Find&& find_fn, Heuristic&& heuristic_fn) const {
    Perf perf[16];
    int n = 0;
    const cudnnStatus_t s = find ? find_fn(perf, &n, ptr(ws), ws_bytes) : heuristic_fn(perf, &n);
    Algo a;
    if (not_supported(s)) return a;
    cuda::check_cudnn(s, find ? "cudnnFindConvolution*AlgorithmEx" : "cudnnGetConvolution*Algorithm_v7");
    const Perf* r = pick(perf, n, find ? ws_bytes : kSearchWorkspaceLimit, cuda::deterministic());
    if (!r) return a;
    a.usable = true;
    a.algo = static_cast<int>(r->algo);
    a.math = r->mathType;
    a.workspace = r->memory;
    return a;
  }

  Algo choose(const void* a, const void* b, void* out, int device) const {
    const cuda::CudnnApi& api = cuda::cudnn();
    const bool find = !cuda::deterministic();
    // Timed search: a workspace as large as the hungriest algorithm (within the limit).
    size_t ws_bytes = 0;
    Tensor ws;
    if (find) {
      for (int i = 0; i < algo_count(); ++i) {
        size_t bytes = 0;
        if (workspace_size(i, &bytes) == CUDNN_STATUS_SUCCESS && bytes <= kSearchWorkspaceLimit)
          ws_bytes = std::max(ws_bytes, bytes);
      }
      try {
        ws = scratch_bytes(ws_bytes, device);
      } catch (const std::bad_alloc&) {
        ws_bytes = 0;  // out of device memory: search among the algorithms that need none
      }
    }
    constexpr int kMax = 16;
    switch (dir) {
      case Dir::forward:
        return search<cudnnConvolutionFwdAlgoPerf_t>(
            find, ws, ws_bytes,
            [&](cudnnConvolutionFwdAlgoPerf_t* p, int* n, void* w, size_t wb) {
              return api.find_forward_ex(h, d.x.get(), a, d.w.get(), b, d.conv.get(), d.y.get(), out, kMax, n, p, w,
                                         wb);
            },
            [&](cudnnConvolutionFwdAlgoPerf_t* p, int* n) {
              return api.forward_algorithm_v7(h, d.x.get(), d.w.get(), d.conv.get(), d.y.get(), kMax, n, p);
            });
      case Dir::backward_data:
        return search<cudnnConvolutionBwdDataAlgoPerf_t>(
            find, ws, ws_bytes,
            [&](cudnnConvolutionBwdDataAlgoPerf_t* p, int* n, void* w, size_t wb) {
              return api.find_backward_data_ex(h, d.w.get(), b, d.y.get(), a, d.conv.get(), d.x.get(), out, kMax, n,
                                               p, w, wb);
            },
            [&](cudnnConvolutionBwdDataAlgoPerf_t* p, int* n) {
              return api.backward_data_algorithm_v7(h, d.w.get(), d.y.get(), d.conv.get(), d.x.get(), kMax, n, p);
            });
      case Dir::backward_filter:
        return search<cudnnConvolutionBwdFilterAlgoPerf_t>(
            find, ws, ws_bytes,
            [&](cudnnConvolutionBwdFilterAlgoPerf_t* p, int* n, void* w, size_t wb) {
              return api.find_backward_filter_ex(h, d.x.get(), a, d.y.get(), b, d.conv.get(), d.w.get(), out, kMax,
                                                 n, p, w, wb);
            },
            [&](cudnnConvolutionBwdFilterAlgoPerf_t* p, int* n) {
              return api.backward_filter_algorithm_v7(h, d.x.get(), d.y.get(), d.conv.get(), d.w.get(), kMax, n, p);
            });
    }
    return Algo{};
  }

  cudnnStatus_t execute(const Algo& algo, const void* a, const void* b, void* out, void* ws, size_t ws_bytes,
                        DType dtype) const {
    const cuda::CudnnApi& api = cuda::cudnn();
    const float one_f = 1.f, zero_f = 0.f;
    const double one_d = 1.0, zero_d = 0.0;
    const void* one = dtype == DType::float64 ? static_cast<const void*>(&one_d) : &one_f;
    const void* zero = dtype == DType::float64 ? static_cast<const void*>(&zero_d) : &zero_f;
    switch (dir) {
      case Dir::forward:
        return api.forward(h, one, d.x.get(), a, d.w.get(), b, d.conv.get(),
                           static_cast<cudnnConvolutionFwdAlgo_t>(algo.algo), ws, ws_bytes, zero, d.y.get(), out);
      case Dir::backward_data:
        return api.backward_data(h, one, d.w.get(), b, d.y.get(), a, d.conv.get(),
                                 static_cast<cudnnConvolutionBwdDataAlgo_t>(algo.algo), ws, ws_bytes, zero, d.x.get(),
                                 out);
      case Dir::backward_filter:
        return api.backward_filter(h, one, d.x.get(), a, d.y.get(), b, d.conv.get(),
                                   static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo.algo), ws, ws_bytes, zero,
                                   d.w.get(), out);
    }
    return CUDNN_STATUS_BAD_PARAM;
  }
};

// Runs one direction through cuDNN on prepared buffers (cuDNN's view: padded x/dx, KRSC w/dw).
// False when cuDNN declines the problem (then nothing was written that matters).
bool run_cudnn(Dir dir, const Problem& pr, const Plan& pl, const void* a, const void* b, void* out) {
  AlgoCache& cache = algo_cache();
  // The operands' alignment joins the key: an algorithm found on 256-byte aligned buffers may
  // need alignment that a view's data pointer lacks.
  const uintptr_t bits = reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b) | reinterpret_cast<uintptr_t>(out);
  std::string key;
  {
    Timer t(Stage::key);
    key = key_of(dir, pr, pl) + ";align" + std::to_string(std::min<uintptr_t>(bits & (~bits + 1), 256));
  }
  const cudnnHandle_t h = cuda::cudnn_handle(pr.device);
  AlgoEntry entry;
  bool cached = false;
  {
    Timer t(Stage::lookup);
    std::lock_guard lock(cache.mutex);
    auto it = cache.entries.find(key);
    if (it != cache.entries.end()) entry = it->second, cached = true;
  }
  if (!cached) {
    ++cache.searches;
    auto descs = std::make_shared<Descs>();
    {
      Timer t(Stage::describe);
      describe(*descs, pr, pl, requested_math(pr));
    }
    Algo algo = DirectionCalls{dir, h, *descs}.choose(a, b, out, pr.device);
    if (algo.usable) {
      // float32 without TF32 runs FMA math whatever the result reports (cuDNN may list an
      // algorithm under another math type); the workspace is asked again for the math it runs.
      if (pr.dtype == DType::float32 && !pr.tf32) algo.math = CUDNN_FMA_MATH;
      descs->conv.set_math(algo.math);
      size_t bytes = 0;
      const cudnnStatus_t s = DirectionCalls{dir, h, *descs}.workspace_size(algo.algo, &bytes);
      if (not_supported(s)) algo.usable = false;
      else cuda::check_cudnn(s, "cudnnGetConvolution*WorkspaceSize");
      algo.workspace = std::max(algo.workspace, bytes);
    }
    entry = {algo, algo.usable ? std::shared_ptr<const Descs>(std::move(descs)) : nullptr};
    std::lock_guard lock(cache.mutex);
    cache.entries[key] = entry;
  }
  const Algo& algo = entry.algo;
  if (!algo.usable) return false;
  const DirectionCalls calls{dir, h, *entry.descs};
  Tensor ws;
  {
    Timer t(Stage::workspace);
    ws = scratch_bytes(algo.workspace, pr.device);
  }
  cudnnStatus_t s;
  {
    Timer t(Stage::execute);
    s = calls.execute(algo, a, b, out, ptr(ws), algo.workspace, pr.dtype);
  }
  if (not_supported(s)) {
    std::lock_guard lock(cache.mutex);
    cache.entries[key] = AlgoEntry{};  // declined: the direct kernels from now on
    return false;
  }
  cuda::check_cudnn(s, (std::string(dir_name(dir)) + " (cudnn)").c_str());
  ++cache.cudnn_runs;
  return true;
}

// ---------------- layout helpers ----------------

int elem_size(DType t) { return static_cast<int>(dtype_size(t)); }

// Keras kernel (kh, kw, cg, o) -> cuDNN KRSC (o, kh, kw, cg).
Tensor to_krsc(const Tensor& kernel, const k::ConvGeom& g, cudaStream_t s) {
  Tensor out = Tensor::empty({g.o, g.kh, g.kw, g.cg}, kernel.dtype(), kernel.device());
  auto ix = cuda::make_indexers({g.o, g.kh, g.kw, g.cg}, {{1, g.kw * g.cg * g.o, g.cg * g.o, g.o}}, "conv2d (cuda)");
  k::gather(elem_size(kernel.dtype()), kernel.raw_data(), ix[0], out.raw_data(), out.numel(), s);
  return out;
}

// cuDNN KRSC (o, kh, kw, cg) -> Keras (kh, kw, cg, o), into `dk`.
void from_krsc(const Tensor& krsc, Tensor& dk, const k::ConvGeom& g, cudaStream_t s) {
  auto ix = cuda::make_indexers({g.kh, g.kw, g.cg, g.o}, {{g.kw * g.cg, g.cg, 1, g.kh * g.kw * g.cg}},
                                "conv2d_backward_weights (cuda)");
  k::gather(elem_size(dk.dtype()), krsc.raw_data(), ix[0], dk.raw_data(), dk.numel(), s);
}

// x in cuDNN's view: itself, or a zero-padded copy.
Tensor padded_input(const Tensor& x, const Problem& pr, const Plan& pl, cudaStream_t s) {
  if (!pl.padded) return x;
  const k::ConvGeom& g = pr.g;
  Tensor xp = Tensor::empty({g.n, pl.hs, pl.ws, g.c}, x.dtype(), x.device());
  k::pad_nhwc(elem_size(x.dtype()), x.raw_data(), g.n, g.h, g.w, g.c, pl.pre_h, pl.pre_w, pl.hs, pl.ws, xp.raw_data(),
              s);
  return xp;
}

// ---------------- epilogues ----------------

struct Epilogue {
  k::Act act = k::Act::linear;
  bool relu6 = false;  // relu, then min(., 6)
};

// Every activation the CPU kernel fuses (its eltwise_alg), with the CPU's error for the rest.
Epilogue epilogue_of(const std::string& act) {
  if (act == "linear") return {k::Act::linear, false};
  if (act == "relu") return {k::Act::relu, false};
  if (act == "relu6") return {k::Act::relu, true};
  if (act == "sigmoid") return {k::Act::sigmoid, false};
  if (act == "tanh") return {k::Act::tanh, false};
  if (act == "elu") return {k::Act::elu, false};
  if (act == "gelu") return {k::Act::gelu, false};
  if (act == "swish") return {k::Act::swish, false};
  fail<ValueError>("conv2d (cuda)", "a fusable activation (linear, relu, relu6, sigmoid, tanh, elu, gelu, swish)",
                   "'" + act + "'");
}

// y (rows, cols) = act(y + bias) in place; nothing for linear without bias.
void apply_epilogue(Tensor& y, const Tensor* bias, const Epilogue& e, int64_t cols, cudaStream_t s) {
  if (!bias && e.act == k::Act::linear) return;
  const int64_t rows = cols == 0 ? 0 : y.numel() / cols;
  k::bias_activation(e.act, y.dtype(), y.raw_data(), bias ? bias->raw_data() : nullptr, rows, cols, s);
  if (e.relu6) k::clip_max(y.dtype(), y.raw_data(), y.numel(), 6.0, s);
}


bool use_cudnn(const Problem& pr, const Plan& pl) { return !cuda::conv_force_direct() && fits_cudnn(pr, pl); }

// ---------------- the three kernels ----------------

// Inputs x, kernel[, bias]; attrs: geometry, "activation", "prop" (no meaning here).
void conv2d_cuda(const TensorList& in, TensorList& out, const Attrs& attrs) {
  const Tensor& x = in[0];
  const Tensor& kernel = in[1];
  Tensor& y = out[0];
  require_float(x, "conv2d");
  const Epilogue epi = epilogue_of(attrs.get_string("activation"));
  const int device = x.device().index;
  cuda::DeviceGuard guard(device);
  const cudaStream_t s = cuda::stream(device);
  if (y.numel() == 0) return;
  Timer whole(Stage::total);
  std::optional<Timer> problem(std::in_place, Stage::problem);
  const Problem pr = make_problem(x.shape(), kernel.shape(), y.shape(), ConvParams::from_attrs(attrs), x.dtype(), device);
  const Plan pl = make_plan(pr);
  problem.reset();
  AlgoCache& cache = algo_cache();
  if (x.numel() == 0 || kernel.numel() == 0) {
    k::fill(y.dtype(), y.raw_data(), y.numel(), 0.0, s);  // an empty sum
  } else {
    bool done = false;
    if (use_cudnn(pr, pl)) {
      std::optional<Timer> prep(std::in_place, Stage::prepare);
      Tensor xp = padded_input(x, pr, pl, s);
      Tensor w = to_krsc(kernel, pr.g, s);
      prep.reset();
      done = run_cudnn(Dir::forward, pr, pl, xp.raw_data(), w.raw_data(), y.raw_data());
    }
    if (!done) {
      k::conv2d_direct(x.dtype(), x.raw_data(), kernel.raw_data(), y.raw_data(), pr.g, s);
      ++cache.direct_runs;
    }
  }
  {
    Timer t(Stage::epilogue);
    apply_epilogue(y, in.size() > 2 ? &in[2] : nullptr, epi, pr.g.o, s);
  }
  cuda::check_launch("conv2d (cuda)");
}

// Inputs dy, kernel[, bias (C)]; attrs: geometry, "input_shape".
void backward_data_cuda(const TensorList& in, TensorList& out, const Attrs& attrs) {
  const Tensor& dy = in[0];
  const Tensor& kernel = in[1];
  Tensor& dx = out[0];
  require_float(dy, "conv2d_backward_data");
  const int device = dy.device().index;
  cuda::DeviceGuard guard(device);
  const cudaStream_t s = cuda::stream(device);
  if (dx.numel() == 0) return;
  Timer whole(Stage::total);
  std::optional<Timer> problem(std::in_place, Stage::problem);
  const Problem pr = make_problem(dx.shape(), kernel.shape(), dy.shape(), ConvParams::from_attrs(attrs), dy.dtype(),
                                  device);
  const Plan pl = make_plan(pr);
  problem.reset();
  const k::ConvGeom& g = pr.g;
  AlgoCache& cache = algo_cache();
  if (dy.numel() == 0 || kernel.numel() == 0) {
    k::fill(dx.dtype(), dx.raw_data(), dx.numel(), 0.0, s);
  } else {
    bool done = false;
    if (use_cudnn(pr, pl)) {
      std::optional<Timer> prep(std::in_place, Stage::prepare);
      Tensor w = to_krsc(kernel, g, s);
      Tensor dxp = pl.padded ? Tensor::empty({g.n, pl.hs, pl.ws, g.c}, dx.dtype(), dx.device()) : dx;
      prep.reset();
      done = run_cudnn(Dir::backward_data, pr, pl, dy.raw_data(), w.raw_data(), dxp.raw_data());
      if (done && pl.padded) {
        // Crop: dx = dxp[:, pre_h : pre_h + h, pre_w : pre_w + w, :].
        Timer t(Stage::epilogue);
        auto ix = cuda::make_indexers({g.n, g.h, g.w, g.c}, {{pl.hs * pl.ws * g.c, pl.ws * g.c, g.c, 1}},
                                      "conv2d_backward_data (cuda)");
        const char* base = static_cast<const char*>(dxp.raw_data()) +
                           (pl.pre_h * pl.ws + pl.pre_w) * g.c * static_cast<int64_t>(dtype_size(dx.dtype()));
        k::gather(elem_size(dx.dtype()), base, ix[0], dx.raw_data(), dx.numel(), s);
      }
    }
    if (!done) {
      k::conv2d_backward_data_direct(dy.dtype(), dy.raw_data(), kernel.raw_data(), dx.raw_data(), g, s);
      ++cache.direct_runs;
    }
  }
  if (in.size() > 2) {
    Timer t(Stage::epilogue);
    apply_epilogue(dx, &in[2], Epilogue{}, g.c, s);  // conv2d_transpose's bias
  }
  cuda::check_launch("conv2d_backward_data (cuda)");
}

// Inputs x, dy; attrs: geometry, "kernel_shape", "with_bias". Outputs dkernel[, dbias].
void backward_weights_cuda(const TensorList& in, TensorList& out, const Attrs& attrs) {
  const Tensor& x = in[0];
  const Tensor& dy = in[1];
  Tensor& dk = out[0];
  require_float(x, "conv2d_backward_weights");
  const int device = x.device().index;
  cuda::DeviceGuard guard(device);
  const cudaStream_t s = cuda::stream(device);
  Timer whole(Stage::total);
  std::optional<Timer> problem(std::in_place, Stage::problem);
  const Problem pr = make_problem(x.shape(), dk.shape(), dy.shape(), ConvParams::from_attrs(attrs), x.dtype(), device);
  const Plan pl = make_plan(pr);
  problem.reset();
  const k::ConvGeom& g = pr.g;
  AlgoCache& cache = algo_cache();
  if (out.size() > 1) {
    // dbias (o) = the column sum of dy (rows, o).
    Tensor& db = out[1];
    const int64_t rows = g.o == 0 ? 0 : dy.numel() / g.o;
    auto kept = cuda::make_indexers({g.o}, {{1}}, "conv2d_backward_weights (cuda)");
    auto red = cuda::make_indexers({rows}, {{g.o}}, "conv2d_backward_weights (cuda)");
    k::ReducePlan plan = k::plan_reduce_sum(kept[0], g.o, rows);
    Tensor scratch;
    if (int64_t bytes = plan.scratch_bytes(g.o)) scratch = Tensor::empty({bytes / 8}, DType::float64, dy.device());
    k::reduce_sum(db.dtype(), dy.raw_data(), kept[0], red[0], db.raw_data(), g.o, rows, 1.0, plan,
                  scratch.defined() ? scratch.raw_data() : nullptr, s);
  }
  if (dk.numel() != 0) {
    if (dy.numel() == 0 || x.numel() == 0) {
      k::fill(dk.dtype(), dk.raw_data(), dk.numel(), 0.0, s);
    } else {
      bool done = false;
      if (use_cudnn(pr, pl)) {
        std::optional<Timer> prep(std::in_place, Stage::prepare);
        Tensor xp = padded_input(x, pr, pl, s);
        Tensor dw = Tensor::empty({g.o, g.kh, g.kw, g.cg}, dk.dtype(), dk.device());
        prep.reset();
        done = run_cudnn(Dir::backward_filter, pr, pl, xp.raw_data(), dy.raw_data(), dw.raw_data());
        if (done) {
          Timer t(Stage::epilogue);
          from_krsc(dw, dk, g, s);
        }
      }
      if (!done) {
        k::conv2d_backward_weights_direct(x.dtype(), x.raw_data(), dy.raw_data(), dk.raw_data(), g, s);
        ++cache.direct_runs;
      }
    }
  }
  cuda::check_launch("conv2d_backward_weights (cuda)");
}

}  // namespace

KERAS_REGISTER_KERNEL(conv2d, cuda, conv2d_cuda);
KERAS_REGISTER_KERNEL(conv2d_backward_data, cuda, backward_data_cuda);
KERAS_REGISTER_KERNEL(conv2d_backward_weights, cuda, backward_weights_cuda);

namespace cuda {

ConvCounters conv_counters() {
  AlgoCache& c = algo_cache();
  ConvCounters out;
  out.cudnn_runs = c.cudnn_runs;
  out.direct_runs = c.direct_runs;
  out.algorithm_searches = c.searches;
  std::lock_guard lock(c.mutex);
  out.cached_algorithms = c.entries.size();
  return out;
}

void clear_conv_algorithm_cache() {
  AlgoCache& c = algo_cache();
  std::lock_guard lock(c.mutex);
  c.entries.clear();
}

}  // namespace cuda
}  // namespace keras
