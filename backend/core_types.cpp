// Small value types of the backend: errors, dtypes, devices, shapes.
#include <sstream>

#include "backend/device.h"
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
  }
  return "unknown";
}

DType dtype_from_name(const std::string& name) {
  for (DType t : {DType::float32, DType::float64, DType::int32, DType::int64, DType::boolean})
    if (dtype_name(t) == name) return t;
  fail<TypeError>("dtype_from_name", "one of float32, float64, int32, int64, bool", "'" + name + "'");
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

namespace {
Device& default_device_ref() {
  static Device device = Device::cpu();
  return device;
}
}  // namespace

Device default_device() { return default_device_ref(); }
void set_default_device(Device device) { default_device_ref() = device; }

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
