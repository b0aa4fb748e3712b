// Which vector extensions this project's own CPU kernels may use: those the CPU has, capped as
// oneDNN's are by ONEDNN_MAX_CPU_ISA (or DNNL_MAX_CPU_ISA). One setting thus makes an AVX-512
// machine run the AVX2 paths of oneDNN and of our kernels alike, which lets tests reach the AVX2
// kernels there and benchmarks approximate an AVX2-only machine (same caches and clocks, so an
// approximation). Each answer is read once, at the first call, and never changes afterwards.
// GCC's target_clones functions (elementwise rows) choose by the CPU alone and are not capped.
#pragma once

namespace keras::cpu {

// AVX2 with FMA.
bool isa_allows_avx2();

// AVX512F, AVX512BW, AVX512VL and AVX512DQ (oneDNN's avx512_core).
bool isa_allows_avx512();

// AVX512-BF16 or AMX bf16 (oneDNN's avx512_core_bf16 or avx512_core_amx).
bool isa_allows_bf16();

}  // namespace keras::cpu
