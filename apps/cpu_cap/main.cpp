// cpu_cap: runs a program as if on an older x86 CPU, for measuring and testing, on one machine,
// what machines of that kind would do.
//
//   cpu_cap avx2 PROGRAM [ARGS...]
//
// The program and every program it starts see an AVX2 CPU without AVX-512: CPUID reports no
// AVX-512, AMX, AVX-VNNI or AVX10 (cpuid_mask.cpp, loaded through LD_AUDIT), and glibc's own string functions are
// told the same (GLIBC_TUNABLES), so oneDNN, MKL, OpenBLAS, ONNX Runtime, PyTorch and our kernels
// all choose what they would choose there. Unlike ONEDNN_MAX_CPU_ISA and its kin, this caps
// libraries that have no such variable. Cache sizes, core counts and clocks stay the machine's.
// Not capped (ld.so ignores LD_AUDIT there): static and setuid programs, and children started
// with a cleaned environment. Cannot run: programs that install their own SIGSEGV handler (perf,
// MPI after MPI_Init, Python's faulthandler) or block SIGSEGV in a thread that runs CPUID.
// Started from a program that is capped already, it runs PROGRAM as it is (still capped).
//
// Exits 77 (the usual "skipped") with a message when the CPU or kernel cannot fault CPUID, 64 on
// a bad command line, 69 without its module; otherwise it becomes the program (exec).
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
  if (syscall(SYS_arch_prctl, kArchGetCpuid, 0L) != 1) return false;
  if (syscall(SYS_arch_prctl, kArchSetCpuid, 0L) != 0) return false;
  return syscall(SYS_arch_prctl, kArchSetCpuid, 1L) == 0;
}

// Inside a capped program CPUID faults already (ARCH_GET_CPUID says 0) and the environment
// carries the cap to PROGRAM.
bool already_capped() {
  const char* level = std::getenv("KERAS_CPU_CAP");
  return level && std::strcmp(level, "avx2") == 0 && syscall(SYS_arch_prctl, kArchGetCpuid, 0L) == 0;
}

// Adds `value` to a list variable: first (LD_AUDIT: ours loads first) or last (GLIBC_TUNABLES:
// a later setting of the same tunable wins, so the user's own hwcaps would otherwise undo ours).
void add_to(const char* name, const std::string& value, char separator, bool first) {
  const char* old = std::getenv(name);
  if (!old || !*old) return void(setenv(name, value.c_str(), 1));
  const std::string joined = first ? value + separator + old : std::string(old) + separator + value;
  setenv(name, joined.c_str(), 1);
}

// Becomes the program; returns only when it cannot be started.
int run(char** program) {
  execvp(program[0], program);
  std::fprintf(stderr, "cpu_cap: expected to run %s, got %s.\n", program[0], std::strerror(errno));
  return 127;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || std::strcmp(argv[1], "avx2") != 0) {
    std::fprintf(stderr, "cpu_cap: expected `cpu_cap avx2 PROGRAM [ARGS...]`, got %s. avx2 is the only level.\n",
                 argc < 2 ? "no arguments" : argc < 3 ? "no program" : argv[1]);
    return 64;
  }
  if (already_capped()) return run(argv + 2);
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
    return 69;
  }
  add_to("LD_AUDIT", module.string(), ':', true);
  add_to("GLIBC_TUNABLES", kGlibcHwcaps, ':', false);
  setenv("KERAS_CPU_CAP", argv[1], 1);
  return run(argv + 2);
}
