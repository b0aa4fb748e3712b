// Linked into every test program (tests/CMakeLists.txt). GPU kernels are compared with the CPU's
// at float32 precision, so TF32, the library's default on GPUs (backend/tf32_mode.cpp), is off
// unless KERAS_ALLOW_TF32 is already set (set to 1, the GPU tests that compare with the CPU at
// 1e-4 fail). The library reads the variable on first use, after this runs; tests of TF32 itself
// turn it on with cuda::set_allow_tf32.
#include <cstdlib>

namespace {
const int tf32_off_unless_set = setenv("KERAS_ALLOW_TF32", "0", /*overwrite=*/0);
}  // namespace
