// Small value types of the backend: errors, dtypes, devices, shapes.
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <sstream>

#include "backend/cuda.h"

#include "backend/device.h"
#include "backend/device_scope.h"
#include "backend/dtype.h"
#include "backend/errors.h"
#include "backend/shape.h"

namespace keras {

std::string error_message(const std::string& where, const std::string& expected, const std::string& got,
                          const std::string& hint) {
  std::string msg = where + ": expected " + expected + ", got " + got + ".";
  if (!hint.empty()) msg += " " + hint;
  return msg;
}

std::string dtype_name(DType t) {
  switch (t) {
    case DType::float32: return "float32";
    case DType::float64: return "float64";
    case DType::int32: return "int32";
    case DType::int64: return "int64";
    case DType::boolean: return "bool";
    case DType::bfloat16: return "bfloat16";
    case DType::float16: return "float16";
  }
  return "unknown";
}

void fail_half_dtype(DType t) {
  fail<TypeError>("plain-loop kernel", "float32, float64, int32, int64 or bool", dtype_name(t),
                  "Two-byte floats are computed in float32 by run_op; read them with .astype(DType::float32).");
}

DType dtype_from_name(const std::string& name) {
  for (DType t : {DType::float32, DType::float64, DType::int32, DType::int64, DType::boolean, DType::bfloat16,
                  DType::float16})
    if (dtype_name(t) == name) return t;
  fail<TypeError>("dtype_from_name", "one of float32, float64, int32, int64, bool, bfloat16, float16", "'" + name + "'");
}

std::string device_kind_name(DeviceKind kind) { return kind == DeviceKind::cpu ? "cpu" : "cuda"; }

std::string Device::str() const {
  return kind == DeviceKind::cpu ? "cpu" : "cuda:" + std::to_string(index);
}

Device Device::parse(const std::string& text) {
  if (text == "cpu" || text == "CPU") return cpu();
  if (text == "gpu" || text == "cuda") return cuda(0);
  for (const std::string prefix : {"cuda:", "gpu:"}) {
    if (text.rfind(prefix, 0) == 0) {
      try {
        return cuda(std::stoi(text.substr(prefix.size())));
      } catch (const std::exception&) {
      }
    }
  }
  fail<ValueError>("Device::parse", "'cpu', 'gpu', 'cuda' or 'cuda:<index>'", "'" + text + "'");
}

Device resolve_default_device(const char* keras_device_env, int cuda_device_count) {
  const std::string accepted = "'cpu', 'cuda' or 'cuda:<index>' (also 'gpu', 'gpu:<index>')";
  if (keras_device_env && *keras_device_env) {
    const std::string value = keras_device_env;
    Device device;
    try {
      device = Device::parse(value);
    } catch (const ValueError&) {
      fail<ValueError>("KERAS_DEVICE", accepted, "'" + value + "'", "Fix or unset the environment variable.");
    }
    if (device.kind == DeviceKind::cuda && (device.index < 0 || device.index >= cuda_device_count))
      fail<DeviceError>("KERAS_DEVICE", cuda_device_count == 0
                                            ? std::string("'cpu' (this process sees no CUDA device)")
                                            : "'cpu' or 'cuda:0' .. 'cuda:" + std::to_string(cuda_device_count - 1) + "'",
                        "'" + value + "'", "Unset KERAS_DEVICE to pick the first GPU when there is one, else the CPU.");
    return device;
  }
  return cuda_device_count > 0 ? Device::cuda(0) : Device::cpu();
}

namespace {
// The default device packed into one word so that default_device(), which every tensor creation
// without a device calls, is one atomic load once resolved: 0 = not resolved yet, else
// 1 + kind * 2^32 + index.
std::atomic<uint64_t> g_default_device{0};
std::mutex g_default_device_mutex;  // serialises the first resolution (it queries the driver)

uint64_t pack_device(Device d) {
  return 1 + (static_cast<uint64_t>(d.kind) << 32) + static_cast<uint64_t>(static_cast<uint32_t>(d.index));
}
Device unpack_device(uint64_t packed) {
  const uint64_t v = packed - 1;
  return {static_cast<DeviceKind>(v >> 32), static_cast<int>(static_cast<uint32_t>(v & 0xffffffffu))};
}
}  // namespace

namespace {
thread_local bool t_scoped = false;
thread_local Device t_scoped_device;
}  // namespace

DeviceScope::DeviceScope(Device device) : had_previous_(t_scoped), previous_(t_scoped_device) {
  t_scoped = true;
  t_scoped_device = device;
}
DeviceScope::~DeviceScope() {
  t_scoped = had_previous_;
  t_scoped_device = previous_;
}

Device default_device() {
  if (t_scoped) return t_scoped_device;
  uint64_t packed = g_default_device.load(std::memory_order_acquire);
  if (packed != 0) return unpack_device(packed);
  std::lock_guard<std::mutex> lock(g_default_device_mutex);
  packed = g_default_device.load(std::memory_order_acquire);
  if (packed != 0) return unpack_device(packed);
  // A bad KERAS_DEVICE throws here and is not remembered: every later call throws the same.
  Device device = resolve_default_device(std::getenv("KERAS_DEVICE"), cuda::device_count());
  g_default_device.store(pack_device(device), std::memory_order_release);
  return device;
}

void set_default_device(Device device) {
  std::lock_guard<std::mutex> lock(g_default_device_mutex);
  g_default_device.store(pack_device(device), std::memory_order_release);
}

void reset_default_device() {
  std::lock_guard<std::mutex> lock(g_default_device_mutex);
  g_default_device.store(0, std::memory_order_release);
}

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::string shape_str(const Shape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += shape[i] < 0 ? "None" : std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return strides;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& where) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    // -1 is an unknown (symbolic) extent: it broadcasts against anything but 1.
    if (da == db || db == 1) out[i] = da;
    else if (da == 1) out[i] = db;
    else if (da < 0) out[i] = db;
    else if (db < 0) out[i] = da;
    else
      fail<ShapeError>(where, "shapes that broadcast", shape_str(a) + " and " + shape_str(b),
                       "Extents must match or be 1.");
  }
  return out;
}

int normalize_axis(int64_t axis, int64_t rank, const std::string& where) {
  int64_t r = rank == 0 ? 1 : rank;
  if (axis < -r || axis >= r)
    fail<IndexError>(where, "an axis in [" + std::to_string(-r) + ", " + std::to_string(r) + ")",
                     "axis " + std::to_string(axis), "The tensor has rank " + std::to_string(rank) + ".");
  return static_cast<int>(axis < 0 ? axis + r : axis);
}

}  // namespace keras
