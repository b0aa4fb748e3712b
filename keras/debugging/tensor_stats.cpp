#include "keras/debugging/tensor_stats.h"

#include <omp.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

namespace keras::debugging {
namespace {

constexpr int64_t kParallelMin = 1 << 16;  // below this a thread team costs more than the read

Tensor host_contiguous(const Tensor& t) {
  Tensor h = t.device().kind == DeviceKind::cpu ? t : t.to(Device::cpu());
  return h.contiguous();
}

// The largest |x| bit pattern: a value is NaN or infinite exactly when its exponent bits are all
// ones, i.e. when (bits & ~sign) >= the bits of +inf. An unsigned max reduction vectorises
// without -ffast-math, where a float comparison chain would not.
template <class U>
U max_magnitude_bits(const void* data, int64_t n, U magnitude_mask) {
  const U* p = static_cast<const U*>(data);
  U m = 0;
#pragma omp parallel for simd reduction(max : m) if (n > kParallelMin) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const U b = p[i] & magnitude_mask;
    m = b > m ? b : m;
  }
  return m;
}

struct Partial {
  int64_t nan = 0, pos_inf = 0, neg_inf = 0, finite = 0;
  double min = std::numeric_limits<double>::infinity(), max = -std::numeric_limits<double>::infinity();
  double sum = 0;
  int64_t first_bad = -1;
};

template <class T>
TensorStats stats_typed(const T* p, int64_t n) {
  const int threads = n > kParallelMin ? omp_get_max_threads() : 1;
  std::vector<Partial> parts(static_cast<size_t>(threads));
  // Pass 1: counts, extremes, sum. Static chunks in thread order keep first_bad the first.
#pragma omp parallel num_threads(threads)
  {
    const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t begin = n * tid / nt, end = n * (tid + 1) / nt;
    Partial& q = parts[static_cast<size_t>(tid)];
    for (int64_t i = begin; i < end; ++i) {
      const double v = static_cast<double>(p[i]);
      if (std::isfinite(v)) {
        ++q.finite;
        q.sum += v;
      } else {
        if (q.first_bad < 0) q.first_bad = i;
        if (std::isnan(v)) {
          ++q.nan;
          continue;
        }
        ++(v > 0 ? q.pos_inf : q.neg_inf);
      }
      if (v < q.min) q.min = v;
      if (v > q.max) q.max = v;
    }
  }
  TensorStats s;
  s.size = n;
  Partial all;
  for (const auto& q : parts) {
    all.nan += q.nan, all.pos_inf += q.pos_inf, all.neg_inf += q.neg_inf, all.finite += q.finite;
    all.sum += q.sum;
    all.min = std::min(all.min, q.min), all.max = std::max(all.max, q.max);
    if (all.first_bad < 0) all.first_bad = q.first_bad;
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  s.nan = all.nan, s.pos_inf = all.pos_inf, s.neg_inf = all.neg_inf, s.first_non_finite = all.first_bad;
  const bool any_value = all.finite + all.pos_inf + all.neg_inf > 0;
  s.min = any_value ? all.min : nan;
  s.max = any_value ? all.max : nan;
  if (all.finite == 0) {
    s.mean = s.std = nan;
    return s;
  }
  s.mean = all.sum / static_cast<double>(all.finite);
  // Pass 2: the spread around the mean (no cancellation, unlike sum of squares).
  double m2 = 0;
  const double mean = s.mean;
#pragma omp parallel for reduction(+ : m2) num_threads(threads) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(p[i]);
    if (std::isfinite(v)) m2 += (v - mean) * (v - mean);
  }
  s.std = std::sqrt(m2 / static_cast<double>(all.finite));
  return s;
}

}  // namespace

bool all_finite(const Tensor& t) {
  if (!t.defined() || !is_floating(t.dtype()) || t.numel() == 0) return true;
  const Tensor h = host_contiguous(t);
  if (h.dtype() == DType::float32)
    return max_magnitude_bits<uint32_t>(h.raw_data(), h.numel(), 0x7fffffffu) < 0x7f800000u;
  return max_magnitude_bits<uint64_t>(h.raw_data(), h.numel(), 0x7fffffffffffffffull) < 0x7ff0000000000000ull;
}

TensorStats tensor_stats(const Tensor& t) {
  if (!t.defined()) return {};
  const Tensor h = host_contiguous(t);
  return dispatch_dtype(h.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return stats_typed<T>(static_cast<const T*>(h.raw_data()), h.numel());
  });
}

std::string format_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string min_max_counts_str(const TensorStats& s) {
  return "min=" + format_number(s.min) + " max=" + format_number(s.max) + " NaN=" + std::to_string(s.nan) +
         " Inf=" + std::to_string(s.inf());
}

std::string index_str(const Shape& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    const int64_t extent = shape[d] > 0 ? shape[d] : 1;
    idx[d] = flat % extent;
    flat /= extent;
  }
  std::string out = "(";
  for (size_t d = 0; d < idx.size(); ++d) out += (d ? ", " : "") + std::to_string(idx[d]);
  return out + (idx.size() == 1 ? ",)" : ")");
}

}  // namespace keras::debugging
