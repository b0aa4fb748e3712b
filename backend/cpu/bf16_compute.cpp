// backend/bf16_compute.h: the bf16 kernel table, the switch and the notice (the CPU's bf16
// instructions: backend/cpu/cpu_isa.h).
#include "backend/bf16_compute.h"
#include "backend/cpu/cpu_isa.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <utility>

namespace keras {
namespace {

int env_setting() {
  const char* v = std::getenv("KERAS_BF16_KERNELS");
  if (!v || !*v) return -1;
  return std::string(v) == "0" ? 0 : 1;
}

// Filled at static-initialisation time, read-only afterwards.
std::map<std::pair<std::string, int>, KernelFn>& bf16_kernel_table() {
  static std::map<std::pair<std::string, int>, KernelFn> table;
  return table;
}

std::atomic<int> forced{-2};  // -2: not yet read from the environment; -1: CPU default; 0/1
std::atomic<uint64_t> runs{0};

int setting() {
  int f = forced.load(std::memory_order_relaxed);
  if (f == -2) {
    int expected = -2;
    forced.compare_exchange_strong(expected, env_setting());
    f = forced.load(std::memory_order_relaxed);
  }
  return f;
}

}  // namespace

bool cpu_has_bf16_instructions() { return cpu::isa_allows_bf16(); }

bool bf16_kernels_enabled(DeviceKind kind) {
  if (kind != DeviceKind::cpu) return false;
  const int f = setting();
  if (f == 0) return false;
  // Forced on: oneDNN's bf16 kernels need AVX-512 at least.
  if (f == 1) return cpu::isa_allows_avx512();
  return cpu_has_bf16_instructions();
}

ScopedBf16Kernels::ScopedBf16Kernels(bool enabled) : previous_(setting()) { forced.store(enabled ? 1 : 0); }
ScopedBf16Kernels::~ScopedBf16Kernels() { forced.store(previous_); }

void register_bf16_kernel(const std::string& name, DeviceKind kind, KernelFn kernel) {
  bf16_kernel_table()[{name, static_cast<int>(kind)}] = std::move(kernel);
}

const KernelFn* find_bf16_kernel(const OpDef& op, DeviceKind kind) {
  const auto& table = bf16_kernel_table();
  auto it = table.find({op.name, static_cast<int>(kind)});
  return it == table.end() ? nullptr : &it->second;
}

uint64_t bf16_kernel_runs() { return runs.load(std::memory_order_relaxed); }

void run_bf16_in_float32(const KernelFn& kernel, const TensorList& in, TensorList& out, const Attrs& attrs) {
  TensorList in32, out32;
  for (const Tensor& t : in) in32.push_back(t.dtype() == DType::bfloat16 ? t.astype(DType::float32) : t);
  for (const Tensor& t : out)
    out32.push_back(Tensor::empty(t.shape(), t.dtype() == DType::bfloat16 ? DType::float32 : t.dtype(), t.device()));
  kernel(in32, out32, attrs);
  for (size_t k = 0; k < out.size(); ++k) out[k].copy_from(out32[k].astype(out[k].dtype()));
}

namespace detail {

void count_bf16_kernel_run() { runs.fetch_add(1, std::memory_order_relaxed); }

void warn_bf16_in_float32(const std::string& op) {
  static std::once_flag once;
  std::call_once(once, [&] {
    if (cpu_has_bf16_instructions())
      std::fprintf(stderr,
                   "keras: bfloat16 op '%s' (and every later one) computes in float32: the bfloat16 kernels are "
                   "switched off (KERAS_BF16_KERNELS=0), so inputs are converted and results rounded.\n",
                   op.c_str());
    else
      std::fprintf(stderr,
                   "keras: bfloat16 op '%s' (and every later one) computes in float32 on this CPU, which has no "
                   "AVX512-BF16 or AMX instructions: inputs are converted and results rounded to bfloat16, so "
                   "mixed_bfloat16 runs slower than float32 here. KERAS_BF16_KERNELS=1 runs oneDNN's emulated "
                   "bfloat16 kernels instead.\n",
                   op.c_str());
  });
}

}  // namespace detail
}  // namespace keras
