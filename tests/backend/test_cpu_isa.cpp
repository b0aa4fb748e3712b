// backend/cpu/cpu_isa.h: ONEDNN_MAX_CPU_ISA caps our own kernels' ISA as it caps oneDNN's. Each
// capped case runs in a fresh process (threadsafe death tests re-execute the program), since the
// answers are read once per process.
#include <cpuid.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

#include "backend/bf16_compute.h"
#include "backend/cpu/conv_choice.h"
#include "backend/cpu/conv_direct.h"
#include "backend/cpu/conv_winograd.h"
#include "backend/cpu/cpu_isa.h"
#include "backend/cpu/reference_conv.h"
#include "backend/cpu/small_gemm.h"
#include "backend/ops.h"
#include "backend/ops_conv.h"
#include "backend/random.h"

namespace keras {
namespace {

bool cpu_has_avx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}

bool cpu_has_avx2() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

ConvParams same_3x3(int64_t stride) {
  ConvParams p;
  p.stride_h = p.stride_w = stride;
  p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = 1;
  return p;
}

// Exits 0 when every answer is what an AVX2-only CPU gives.
[[noreturn]] void check_capped_at_avx2() {
  bool ok = !cpu::isa_allows_avx512() && !cpu::isa_allows_bf16() && !cpu_has_bf16_instructions() &&
            cpu::isa_allows_avx2() == cpu_has_avx2();
  // Stride 2 is the AVX-512 kernel's alone; stride 1 stays with the AVX2 kernel.
  ok = ok && !cpu::conv2d_direct_supported({3, 3, 16, 16}, same_3x3(2), "linear");
  ok = ok && cpu::conv2d_direct_supported({3, 3, 16, 16}, same_3x3(1), "relu") == cpu_has_avx2();
  // The op still computes the convolution, with the direct candidate (now the AVX2 kernel) forced.
  cpu::force_conv_candidate(cpu::ConvCandidate::direct);
  Tensor x = random::normal({2, 9, 10, 16}, 0, 1, 1), k = random::normal({3, 3, 16, 16}, 0, 1, 2);
  Tensor y = ops::conv2d(x, k, {}, {.padding = "same"});
  Tensor ref = cpu::reference_conv2d(x, k, Tensor(), same_3x3(1));
  const double err = element_as_double(ops::max(ops::abs(ops::subtract(y, ref))), 0);
  std::exit(ok && err < 1e-3 ? 0 : 1);
}

[[noreturn]] void check_capped_below_avx2() {
  const bool ok = !cpu::isa_allows_avx512() && !cpu::isa_allows_avx2() && !cpu::conv_direct_available() &&
                  !cpu::conv2d_direct_supported({3, 3, 16, 16}, same_3x3(1), "linear") &&
                  !cpu::conv2d_winograd_supported({3, 3, 16, 16}, same_3x3(1), "linear") && !cpu::small_gemm_available();
  std::exit(ok ? 0 : 1);
}

// Sets an environment variable for the death test's child and restores the parent's value after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(CpuIsa, UncappedAnswersAreTheCpus) {
  if (std::getenv("ONEDNN_MAX_CPU_ISA") || std::getenv("DNNL_MAX_CPU_ISA")) GTEST_SKIP() << "a cap is set outside";
  EXPECT_EQ(cpu::isa_allows_avx512(), cpu_has_avx512());
  EXPECT_EQ(cpu::isa_allows_avx2(), cpu_has_avx2());
  EXPECT_EQ(cpu::isa_allows_bf16(), cpu_has_bf16_instructions());
  if (cpu_has_avx512()) {
    EXPECT_TRUE(cpu::conv2d_direct_supported({3, 3, 16, 16}, same_3x3(2), "linear"));
  }
}

TEST(CpuIsa, OnednnCapAtAvx2TurnsOffOurAvx512Kernels) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ScopedEnv cap("ONEDNN_MAX_CPU_ISA", "AVX2");
  EXPECT_EXIT(check_capped_at_avx2(), testing::ExitedWithCode(0), "");
}

TEST(CpuIsa, OlderVariableNameCapsToo) {
  if (std::getenv("ONEDNN_MAX_CPU_ISA")) GTEST_SKIP() << "oneDNN prefers the cap set outside";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ScopedEnv cap("DNNL_MAX_CPU_ISA", "SSE41");
  EXPECT_EXIT(check_capped_below_avx2(), testing::ExitedWithCode(0), "");
}

// apps/cpu_cap runs this program a second time (ctest: *_under_cpu_cap) as on a Haswell-class
// CPU: CPUID itself, on every thread and in re-executed children, reports no AVX-512 or bfloat16,
// so GCC's feature tests, oneDNN and our kernels all answer as on an AVX2-only machine, with no
// oneDNN variable set.
bool cpuid_reports_avx512_or_bf16() {
  unsigned a, b, c, d;
  __cpuid_count(7, 0, a, b, c, d);
  const bool avx512f = (b >> 16) & 1;
  __cpuid_count(7, 1, a, b, c, d);
  const bool avx512_bf16 = (a >> 5) & 1;
  return avx512f || avx512_bf16;
}

TEST(CpuIsa, UnderCpuCapEverythingSeesAnAvx2Cpu) {
  const char* cap = std::getenv("KERAS_CPU_CAP");
  if (cap == nullptr || std::strcmp(cap, "avx2") != 0) GTEST_SKIP() << "run by ctest under apps/cpu_cap";
  if (std::getenv("ONEDNN_MAX_CPU_ISA") || std::getenv("DNNL_MAX_CPU_ISA")) GTEST_SKIP() << "a oneDNN cap is set too";
  EXPECT_FALSE(cpuid_reports_avx512_or_bf16());
  bool thread_sees_avx512 = true;
  std::thread([&] { thread_sees_avx512 = cpuid_reports_avx512_or_bf16(); }).join();
  EXPECT_FALSE(thread_sees_avx512);
  EXPECT_FALSE(__builtin_cpu_supports("avx512f"));
  EXPECT_FALSE(cpu_has_avx512());
  // What the masked CPU still has stays visible.
  EXPECT_TRUE(cpu_has_avx2());
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(check_capped_at_avx2(), testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace keras
