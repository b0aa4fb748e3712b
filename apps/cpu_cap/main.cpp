// cpu_cap: runs a program as if on an older x86 CPU, for measuring and testing, on one machine,
// what machines of that kind would do.
//
//   cpu_cap avx2 PROGRAM [ARGS...]
//
// The program and every program it starts see a Haswell-class CPU: CPUID reports no AVX-512, AMX,
// AVX-VNNI or AVX10 (cpuid_mask.cpp, loaded through LD_AUDIT), and glibc's own string functions are
// told the same (GLIBC_TUNABLES), so oneDNN, MKL, OpenBLAS, ONNX Runtime, PyTorch and our kernels
// all choose what they would choose there. Unlike ONEDNN_MAX_CPU_ISA and its kin, this caps
// libraries that have no such variable. Cache sizes, core counts and clocks stay the machine's.
//
// Exits 77 (the usual "skipped") with a message when the CPU or kernel cannot fault CPUID, 64 on
// a bad command line; otherwise it becomes the program (exec).
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace {

constexpr long kArchGetCpuid = 0x1011, kArchSetCpuid = 0x1012;

// glibc picked its string functions before any module could mask CPUID; these hwcaps undo the
// AVX-512 ones (names glibc does not know are ignored).
constexpr const char* kGlibcHwcaps =
    "glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,-AVX512CD,-AVX_VNNI,-AVX512_VNNI,-AVX512_BF16,-AMX_TILE";

bool cpuid_faulting_works() {
  if (syscall(SYS_arch_prctl, kArchGetCpuid, 0) != 1) return false;
  if (syscall(SYS_arch_prctl, kArchSetCpuid, 0) != 0) return false;
  return syscall(SYS_arch_prctl, kArchSetCpuid, 1) == 0;
}

void prepend(const char* name, const std::string& value, char separator) {
  const char* old = std::getenv(name);
  const std::string joined = old && *old ? value + separator + old : value;
  setenv(name, joined.c_str(), 1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || std::strcmp(argv[1], "avx2") != 0) {
    std::fprintf(stderr, "cpu_cap: expected `cpu_cap avx2 PROGRAM [ARGS...]`, got %s. avx2 is the only level.\n",
                 argc < 2 ? "no arguments" : argc < 3 ? "no program" : argv[1]);
    return 64;
  }
  if (!cpuid_faulting_works()) {
    std::fprintf(stderr,
                 "cpu_cap: expected a CPU and kernel that can fault CPUID (cpuid_fault in /proc/cpuinfo), got "
                 "none. Without it the cap cannot be set; %s was not run.\n",
                 argv[2]);
    return 77;
  }
  const auto module = std::filesystem::canonical("/proc/self/exe").parent_path() / "libcpuid_mask.so";
  if (!std::filesystem::exists(module)) {
    std::fprintf(stderr, "cpu_cap: expected its module at %s, got no such file. Rebuild the cpu_cap target.\n",
                 module.c_str());
    return 64;
  }
  prepend("LD_AUDIT", module.string(), ':');
  prepend("GLIBC_TUNABLES", kGlibcHwcaps, ':');
  setenv("KERAS_CPU_CAP", argv[1], 1);
  execvp(argv[2], argv + 2);
  std::fprintf(stderr, "cpu_cap: expected to run %s, got %s.\n", argv[2], std::strerror(errno));
  return 127;
}
