// Element types. float32 computes, int32/int64 hold labels and indices, float64 serves
// gradient checks, bool holds comparison results (one byte per element). bfloat16 and float16
// (two bytes) are mixed precision's compute types: stored in two bytes, computed in float32 and
// rounded back (see half.h and run_op), so every op takes them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace keras {

// Appended, never reordered: ops carry dtypes as integers in their attributes.
enum class DType : uint8_t { float32, float64, int32, int64, boolean, bfloat16, float16 };

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::float32: return 4;
    case DType::float64: return 8;
    case DType::int32: return 4;
    case DType::int64: return 8;
    case DType::boolean: return 1;
    case DType::bfloat16: return 2;
    case DType::float16: return 2;
  }
  return 0;
}
// The two-byte floating types of mixed precision.
constexpr bool is_half(DType t) { return t == DType::bfloat16 || t == DType::float16; }
constexpr bool is_floating(DType t) { return t == DType::float32 || t == DType::float64 || is_half(t); }
constexpr bool is_integral(DType t) { return t == DType::int32 || t == DType::int64; }

// Keras spelling: "float32", "int64", "bool", "bfloat16".
std::string dtype_name(DType t);
// Parses a Keras dtype name; throws TypeError for unknown names.
DType dtype_from_name(const std::string& name);

template <class T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::float32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::float64; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::int32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::int64; };
template <> struct dtype_of<bool> { static constexpr DType value = DType::boolean; };

// bfloat16/float16 reached a kernel written for the C++ types (a TypeError); out of line.
[[noreturn]] void fail_half_dtype(DType t);

// Calls f(T{}) with T the C++ type of `t`; the typed-kernel switch used by plain loops. The
// two-byte types have no C++ arithmetic type: run_op hands kernels float32 in their place, and
// the few ops that move them natively (copies, casts, views) read their bits (half.h).
template <class F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::float32: return f(float{});
    case DType::float64: return f(double{});
    case DType::int32: return f(int32_t{});
    case DType::int64: return f(int64_t{});
    case DType::boolean: return f(bool{});
    case DType::bfloat16:
    case DType::float16: fail_half_dtype(t);
  }
  return f(float{});
}

}  // namespace keras
