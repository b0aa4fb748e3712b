// backend/cpu/cpu_isa.h: the CPU's extensions, capped by oneDNN's effective ISA.
#include "backend/cpu/cpu_isa.h"

#include <oneapi/dnnl/dnnl.hpp>

namespace keras::cpu {
namespace {

// oneDNN encodes an ISA as the bits of every ISA it includes, so "has at least X" is a mask test.
// Its effective ISA is the CPU's, lowered by ONEDNN_MAX_CPU_ISA where that is set.
bool onednn_includes(dnnl::cpu_isa isa) {
  const auto have = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto want = static_cast<unsigned>(isa);
  return (have & want) == want;
}

}  // namespace

bool isa_allows_avx2() {
  static const bool ok =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && onednn_includes(dnnl::cpu_isa::avx2);
  return ok;
}

bool isa_allows_avx512() {
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                         onednn_includes(dnnl::cpu_isa::avx512_core);
  return ok;
}

bool isa_allows_bf16() {
  static const bool ok =
      onednn_includes(dnnl::cpu_isa::avx512_core_bf16) || onednn_includes(dnnl::cpu_isa::avx512_core_amx);
  return ok;
}

}  // namespace keras::cpu
