#include "layers/dtype_policy.h"

#include <mutex>

#include "backend/errors.h"

namespace keras {

namespace {
std::mutex g_mutex;
DTypePolicy g_global;
}  // namespace

DTypePolicy DTypePolicy::from_name(const std::string& name, const std::string& where) {
  if (name.empty()) return mixed_precision::global_policy();
  struct Known {
    const char* name;
    DType variable, compute;
  };
  static const Known kKnown[] = {{"float32", DType::float32, DType::float32},
                                 {"float64", DType::float64, DType::float64},
                                 {"mixed_bfloat16", DType::float32, DType::bfloat16},
                                 {"mixed_float16", DType::float32, DType::float16},
                                 {"bfloat16", DType::bfloat16, DType::bfloat16},
                                 {"float16", DType::float16, DType::float16}};
  for (const auto& k : kKnown)
    if (name == k.name) return DTypePolicy{name, k.variable, k.compute};
  fail<TypeError>(where, "a dtype policy (float32, float64, mixed_bfloat16, mixed_float16, bfloat16, float16)",
                  "'" + name + "'");
}

bool DTypePolicy::casts_input(DType t) const {
  if (!is_floating(t) || t == compute_dtype) return false;
  return compute_dtype != DType::float32 || is_half(t);
}

namespace mixed_precision {

void set_global_policy(const std::string& name) {
  DTypePolicy p = DTypePolicy::from_name(name.empty() ? "float32" : name, "mixed_precision::set_global_policy");
  std::lock_guard<std::mutex> lock(g_mutex);
  g_global = p;
}

DTypePolicy global_policy() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_global;
}

}  // namespace mixed_precision
}  // namespace keras
