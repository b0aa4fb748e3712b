// Which vector extensions this project's own CPU kernels may use: those the CPU has, capped as
// oneDNN's are by ONEDNN_MAX_CPU_ISA (or DNNL_MAX_CPU_ISA). One setting thus makes an AVX-512
// machine run the AVX2 paths of oneDNN and of our kernels alike, which lets tests reach the AVX2
// kernels there and benchmarks approximate an AVX2-only machine (same caches and clocks, so an
// approximation). Each answer is read once, at the first call, and never changes afterwards.
// GCC's target_clones functions (elementwise loops, the bodies of the batch- and layer-norm rows,
// Adam) choose by the CPU alone and are not capped. Choices pinned with KERAS_CONV_CHOICES do not
// record the cap: a file written by a capped run pins AVX2-timed choices in uncapped runs.
#pragma once

namespace keras::cpu {

// The CPU has AVX2 with FMA, and oneDNN's effective ISA includes avx2.
bool isa_allows_avx2();

// The CPU has AVX512F, AVX512BW, AVX512VL and AVX512DQ, and oneDNN's effective ISA includes
// avx512_core.
bool isa_allows_avx512();

// oneDNN's effective ISA includes avx512_core_bf16 or avx512_core_amx (bfloat16 instructions).
bool isa_allows_bf16();

}  // namespace keras::cpu
