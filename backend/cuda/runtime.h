// Internal plumbing of the CUDA backend (not a public header): error checks, the per-device
// stream every op of that device is queued on, the current-device guard, per-thread cuBLAS
// handles. One stream per device keeps the caching allocator simple: a freed block can be
// handed to the next op at once, because that op is queued after every earlier user.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>

#include "backend/device.h"
#include "backend/errors.h"

namespace keras::cuda {

// Throws DeviceError "<where>: expected CUDA success, got <error name>: <text>" on failure
// (and clears the error so that the next call starts clean).
void check(cudaError_t status, const char* where);
void check_cublas(cublasStatus_t status, const char* where);

// The stream of `device` (created on first use, non-blocking with respect to the legacy
// stream); DeviceError for an index outside [0, device_count()).
cudaStream_t stream(int device);

// Makes `device` current for the scope and restores the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

// A library of the toolkit opened with dlopen: the loader's search (ld cache, LD_LIBRARY_PATH)
// first, then the toolkit's library folder seen at configure time. Throws DeviceError naming
// `what` when the library or a symbol is missing. Never closed (the handles live as long as the
// process, as the function tables built from them).
class DynamicLibrary {
 public:
  DynamicLibrary(std::string what, std::string soname);
  // Sets `fn` to the symbol `name`.
  template <class F>
  void bind(F& fn, const char* name) const {
    fn = reinterpret_cast<F>(symbol(name));
  }

 private:
  void* symbol(const char* name) const;
  std::string what_, soname_;
  void* handle_ = nullptr;
};

// cuBLAS, loaded with dlopen on first use rather than linked: loading libcublas/libcublasLt
// costs every process ~0.2 s and ~200 MB, which CPU-only programs must not pay. Throws
// DeviceError naming the library when it cannot be loaded.
struct CublasApi {
  cublasStatus_t (*create)(cublasHandle_t*);
  cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t);
  cublasStatus_t (*set_math_mode)(cublasHandle_t, cublasMath_t);
  cublasStatus_t (*gemm_strided_batched_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                            const void*, const void*, cudaDataType, int, long long, const void*,
                                            cudaDataType, int, long long, const void*, void*, cudaDataType, int,
                                            long long, int, cublasComputeType_t, cublasGemmAlgo_t);
  const char* (*status_name)(cublasStatus_t);
  const char* (*status_string)(cublasStatus_t);
};
const CublasApi& cublas();

// This thread's cuBLAS handle for `device`, bound to stream(device), default (non-TF32) math.
// Handles are created once per thread and device and deliberately never destroyed: destroying
// them from thread-exit or static destructors races the driver's own shutdown.
cublasHandle_t cublas_handle(int device);

// Checks that a kernel launch was accepted.
inline void check_launch(const char* where) { check(cudaGetLastError(), where); }

}  // namespace keras::cuda
