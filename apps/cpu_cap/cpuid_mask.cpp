// apps/cpu_cap/cpuid_mask.cpp: the audit module `cpu_cap` loads into a program (LD_AUDIT) so that
// the program sees an older x86 CPU than the one it runs on.
//
// Every library picks its kernels from what the CPUID instruction reports (oneDNN, MKL, OpenBLAS,
// ONNX Runtime's MLAS, GCC's __builtin_cpu_supports), and only some of them have a variable that
// caps the choice. Linux can make CPUID fault (arch_prctl ARCH_SET_CPUID, on CPUs with CPUID
// faulting): each CPUID then raises SIGSEGV, which this module answers with the real result minus
// the masked features. An audit module is used rather than LD_PRELOAD because ld.so calls
// la_version before any library's constructor runs (a preloaded library's constructor runs after
// those of the program's own libraries, some of which read CPUID in theirs).
//
// The setting is per thread, inherited by threads and reset by execve (cpu_cap passes LD_AUDIT on,
// so child programs load this module again). A program that installs its own SIGSEGV handler
// later would take these faults itself; it then dies on its first CPUID rather than running
// uncapped; so does a thread that blocks SIGSEGV (the kernel then kills the process). KERAS_CPU_CAP
// names the level; only "avx2" (an AVX2 CPU without AVX-512) is defined. Without it the module
// asks ld.so to drop it.
#include <link.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <cpuid.h>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace {

constexpr long kSysArchPrctl = 158;  // x86-64
constexpr long kArchSetCpuid = 0x1012;

// A raw system call: the handler may run on any thread at any point, so it touches no errno.
long arch_prctl(long code, long arg) {
  long ret;
  asm volatile("syscall" : "=a"(ret) : "a"(kSysArchPrctl), "D"(code), "S"(arg) : "rcx", "r11", "memory");
  return ret;
}

constexpr uint32_t bit(int n) { return uint32_t{1} << n; }

// The features an AVX2 CPU of the Haswell to Zen 3 kind lacks: the AVX-512 family, AMX, the
// VEX-encoded VNNI, IFMA and bfloat16 conversions that came with AVX-512 era cores, and AVX10.
// (GFNI, VAES and VPCLMULQDQ stay: some AVX2-only CPUs have them.)
void mask_to_avx2(uint32_t leaf, uint32_t subleaf, uint32_t r[4]) {
  enum { eax, ebx, ecx, edx };
  if (leaf == 7 && subleaf == 0) {
    r[ebx] &= ~(bit(16) | bit(17) | bit(21) | bit(26) | bit(27) | bit(28) | bit(30) | bit(31));
    r[ecx] &= ~(bit(1) | bit(6) | bit(11) | bit(12) | bit(14));
    r[edx] &= ~(bit(2) | bit(3) | bit(8) | bit(22) | bit(23) | bit(24) | bit(25));
  } else if (leaf == 7 && subleaf == 1) {
    r[eax] &= ~(bit(4) | bit(5) | bit(21) | bit(23));
    r[edx] &= ~(bit(4) | bit(5) | bit(8) | bit(10) | bit(19));  // bit 8: AMX-COMPLEX
  } else if (leaf == 0xD && subleaf == 0) {
    r[eax] &= ~(bit(5) | bit(6) | bit(7) | bit(17) | bit(18));  // opmask, ZMM and tile state
  }
}

struct sigaction previous_action;

void on_sigsegv(int sig, siginfo_t* info, void* context) {
  auto& regs = static_cast<ucontext_t*>(context)->uc_mcontext.gregs;
  // A faulting CPUID is a general-protection fault (SI_KERNEL); other faults are left alone
  // before RIP is read (an unreadable RIP then faults here and ends the process as it would have).
  const auto* pc = reinterpret_cast<const unsigned char*>(regs[REG_RIP]);
  if (info->si_code == SI_KERNEL && pc[0] == 0x0F && pc[1] == 0xA2) {
    const auto leaf = static_cast<uint32_t>(regs[REG_RAX]), subleaf = static_cast<uint32_t>(regs[REG_RCX]);
    uint32_t r[4];
    arch_prctl(kArchSetCpuid, 1);
    __cpuid_count(leaf, subleaf, r[0], r[1], r[2], r[3]);
    arch_prctl(kArchSetCpuid, 0);
    mask_to_avx2(leaf, subleaf, r);
    regs[REG_RAX] = r[0];
    regs[REG_RBX] = r[1];
    regs[REG_RCX] = r[2];
    regs[REG_RDX] = r[3];
    regs[REG_RIP] += 2;
    return;
  }
  // Not ours: give the fault to whoever handled it before (or the default action) and let the
  // instruction fault again.
  sigaction(SIGSEGV, &previous_action, nullptr);
  (void)sig;
}

// Writes the pieces to stderr and ends the process before the program starts.
void fail(std::initializer_list<const char*> pieces) {
  for (const char* piece : pieces) (void)!write(2, piece, strlen(piece));
  _exit(70);
}

}  // namespace

extern "C" unsigned int la_version(unsigned int version) {
  (void)version;
  const char* level = getenv("KERAS_CPU_CAP");
  if (level == nullptr) return 0;  // not asked for: ld.so unloads the module
  if (strcmp(level, "avx2") != 0) {
    fail({"cpuid_mask: expected KERAS_CPU_CAP=avx2, got '", level, "'. Start programs through `cpu_cap avx2`.\n"});
  }
  struct sigaction action {};
  action.sa_sigaction = on_sigsegv;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  // Nothing may interrupt the handler between its two arch_prctl calls: a CPUID there would see
  // the unmasked CPU.
  sigfillset(&action.sa_mask);
  if (sigaction(SIGSEGV, &action, &previous_action) != 0 || arch_prctl(kArchSetCpuid, 0) != 0) {
    fail({"cpuid_mask: expected CPUID faulting (arch_prctl ARCH_SET_CPUID), got a refusal. "
          "This CPU or kernel cannot fault CPUID; the program was not started uncapped.\n"});
  }
  return LAV_CURRENT;
}
