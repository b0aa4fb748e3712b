// Device discovery, streams, the device guard and cuBLAS handles of the CUDA backend.
#include "backend/cuda/runtime.h"

#include <dlfcn.h>

#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/cuda.h"

namespace keras::cuda {
namespace {

struct Discovery {
  int count = 0;
  std::string reason;
};

// Asked once: cudaGetDeviceCount loads the driver, which is slow and cannot change its answer.
// Without a driver it returns an error (cudaErrorNoDevice, cudaErrorInsufficientDriver, ...),
// which is the "no device" answer, not a failure.
const Discovery& discovery() {
  static const Discovery d = [] {
    Discovery out;
    int n = 0;
    cudaError_t status = cudaGetDeviceCount(&n);
    if (status != cudaSuccess) {
      out.reason = std::string("cudaGetDeviceCount failed: ") + cudaGetErrorName(status) + " (" +
                   cudaGetErrorString(status) + ")";
      (void)cudaGetLastError();
      return out;
    }
    out.count = n;
    if (n == 0) out.reason = "the driver reports no CUDA device";
    return out;
  }();
  return d;
}

}  // namespace

bool built() { return true; }
int device_count() { return discovery().count; }
std::string unavailable_reason() { return discovery().reason; }

void check(cudaError_t status, const char* where) {
  if (status == cudaSuccess) return;
  (void)cudaGetLastError();
  fail<DeviceError>(where, "CUDA success", std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status));
}

DynamicLibrary::DynamicLibrary(std::string what, std::string soname) : what_(std::move(what)), soname_(std::move(soname)) {
  std::string tried = soname_;
  handle_ = dlopen(soname_.c_str(), RTLD_NOW | RTLD_LOCAL);
#ifdef KERAS_CUDA_LIBRARY_DIR
  if (!handle_) {
    const std::string path = std::string(KERAS_CUDA_LIBRARY_DIR) + "/" + soname_;
    tried += ", " + path;
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  }
#endif
  if (!handle_)
    fail<DeviceError>(what_, "a loadable " + soname_, "none (tried " + tried + ")",
                      "Install " + what_ + " or add its folder to LD_LIBRARY_PATH.");
}

void* DynamicLibrary::symbol(const char* name) const {
  void* p = dlsym(handle_, name);
  if (!p) fail<DeviceError>(what_, std::string("the symbol ") + name + " in " + soname_, "none");
  return p;
}

const CublasApi& cublas() {
  static const CublasApi api = [] {
    // The soname of the cuBLAS the backend was compiled against.
    const DynamicLibrary lib("cuBLAS", "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR));
    CublasApi a{};
    lib.bind(a.create, "cublasCreate_v2");
    lib.bind(a.set_stream, "cublasSetStream_v2");
    lib.bind(a.set_math_mode, "cublasSetMathMode");
    lib.bind(a.gemm_strided_batched_ex, "cublasGemmStridedBatchedEx");
    lib.bind(a.status_name, "cublasGetStatusName");
    lib.bind(a.status_string, "cublasGetStatusString");
    return a;
  }();
  return api;
}

void check_cublas(cublasStatus_t status, const char* where) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  const CublasApi& api = cublas();
  fail<DeviceError>(where, "CUBLAS_STATUS_SUCCESS", api.status_name(status), api.status_string(status));
}

static void check_index(int device, const char* where) {
  int n = device_count();
  if (device < 0 || device >= n)
    fail<DeviceError>(where, "a CUDA device index in [0, " + std::to_string(n) + ")", "cuda:" + std::to_string(device),
                      n == 0 ? "No CUDA device is usable: " + unavailable_reason() + "." : "");
}

cudaStream_t stream(int device) {
  // Fixed-size table: never reallocated, so readers need no lock once an entry is set.
  static std::mutex mutex;
  static std::vector<cudaStream_t> streams(64, nullptr);
  check_index(device, "cuda stream");
  std::lock_guard lock(mutex);
  cudaStream_t& s = streams.at(static_cast<size_t>(device));
  if (!s) {
    DeviceGuard guard(device);
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  return s;
}

DeviceGuard::DeviceGuard(int device) {
  check_index(device, "cuda device guard");
  check(cudaGetDevice(&previous_), "cudaGetDevice");
  if (previous_ != device) check(cudaSetDevice(device), "cudaSetDevice");
}

DeviceGuard::~DeviceGuard() {
  int current = -1;
  if (previous_ >= 0 && cudaGetDevice(&current) == cudaSuccess && current != previous_) (void)cudaSetDevice(previous_);
}

cublasHandle_t cublas_handle(int device) {
  thread_local std::vector<cublasHandle_t> handles;
  cudaStream_t s = stream(device);
  if (handles.size() <= static_cast<size_t>(device)) handles.resize(static_cast<size_t>(device) + 1, nullptr);
  cublasHandle_t& h = handles[static_cast<size_t>(device)];
  if (!h) {
    DeviceGuard guard(device);
    check_cublas(cublas().create(&h), "cublasCreate");
    check_cublas(cublas().set_math_mode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  }
  check_cublas(cublas().set_stream(h, s), "cublasSetStream");
  return h;
}

void synchronize(int device) {
  DeviceGuard guard(device);
  check(cudaStreamSynchronize(stream(device)), "cuda::synchronize");
}

}  // namespace keras::cuda
