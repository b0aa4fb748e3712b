// collectives::Communicator over NCCL, one per process and GPU. NCCL is loaded with dlopen on
// first use (as cuBLAS is: CPU-only processes never load it). Process 0's unique id reaches the
// others over the bootstrap communicator (MPI). Collectives run on the communicator's own stream:
// each waits for the device's compute stream (the buffers' producers) and the compute stream
// waits for the collective, so ops queued after it see its result.
#include <nccl.h>

#include <array>
#include <string>

#include "backend/collectives/communicator.h"
#include "backend/cuda/runtime.h"

namespace keras::collectives {
namespace {

struct NcclApi {
  ncclResult_t (*get_unique_id)(ncclUniqueId*);
  ncclResult_t (*comm_init_rank)(ncclComm_t*, int, ncclUniqueId, int);
  ncclResult_t (*comm_destroy)(ncclComm_t);
  ncclResult_t (*comm_abort)(ncclComm_t);
  ncclResult_t (*all_reduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
  ncclResult_t (*broadcast)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*all_gather)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
  const char* (*error_string)(ncclResult_t);
};

const NcclApi& nccl() {
  static const NcclApi api = [] {
    const cuda::DynamicLibrary lib("NCCL", "libnccl.so." + std::to_string(NCCL_MAJOR));
    NcclApi a{};
    lib.bind(a.get_unique_id, "ncclGetUniqueId");
    lib.bind(a.comm_init_rank, "ncclCommInitRank");
    lib.bind(a.comm_destroy, "ncclCommDestroy");
    lib.bind(a.comm_abort, "ncclCommAbort");
    lib.bind(a.all_reduce, "ncclAllReduce");
    lib.bind(a.broadcast, "ncclBroadcast");
    lib.bind(a.all_gather, "ncclAllGather");
    lib.bind(a.error_string, "ncclGetErrorString");
    return a;
  }();
  return api;
}

void check_nccl(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return;
  fail<CollectiveError>(std::string("collectives (nccl) ") + what, "ncclSuccess", nccl().error_string(r));
}

ncclDataType_t nccl_type(ElementType t) {
  switch (t) {
    case ElementType::float32: return ncclFloat32;
    case ElementType::float64: return ncclFloat64;
    case ElementType::float16: return ncclFloat16;
    case ElementType::bfloat16: return ncclBfloat16;
    case ElementType::int32: return ncclInt32;
    case ElementType::int64: return ncclInt64;
  }
  return ncclFloat32;
}

// Completion of work queued on the NCCL stream, seen through an event.
class NcclRequest : public Request {
 public:
  NcclRequest(int device, cudaEvent_t done) : device_(device), done_(done) {}
  ~NcclRequest() override {
    cuda::DeviceGuard guard(device_);
    cudaEventSynchronize(done_);
    cudaEventDestroy(done_);
  }
  void wait() override {
    cuda::DeviceGuard guard(device_);
    cuda::check(cudaEventSynchronize(done_), "nccl request wait");
  }
  bool test() override {
    cuda::DeviceGuard guard(device_);
    const cudaError_t s = cudaEventQuery(done_);
    if (s == cudaErrorNotReady) return false;
    cuda::check(s, "nccl request test");
    return true;
  }

 private:
  int device_;
  cudaEvent_t done_;
};

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(int device, Communicator& bootstrap) : device_(device), rank_(bootstrap.rank()), size_(bootstrap.size()) {
    cuda::DeviceGuard guard(device_);
    ncclUniqueId id{};
    if (rank_ == 0) check_nccl(nccl().get_unique_id(&id), "unique id");
    bootstrap.broadcast(id.internal, sizeof(id.internal) / 4, ElementType::int32, 0);
    check_nccl(nccl().comm_init_rank(&comm_, size_, id, rank_), "init");
    cuda::check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "nccl stream");
  }
  ~NcclCommunicator() override {
    cuda::DeviceGuard guard(device_);
    cudaStreamSynchronize(stream_);
    nccl().comm_destroy(comm_);
    cudaStreamDestroy(stream_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "nccl"; }
  Device device() const override { return Device::cuda(device_); }

  void allreduce(void* data, size_t count, ElementType type, ReduceOp op) override {
    allreduce_async(data, count, type, op);  // the compute stream already waits for it
  }
  std::unique_ptr<Request> allreduce_async(void* data, size_t count, ElementType type, ReduceOp op) override {
    cuda::DeviceGuard guard(device_);
    after_compute();
    check_nccl(nccl().all_reduce(data, data, count, nccl_type(type), op == ReduceOp::mean ? ncclAvg : ncclSum, comm_,
                                 stream_), "allreduce");
    return std::make_unique<NcclRequest>(device_, before_compute());
  }
  void broadcast(void* data, size_t count, ElementType type, int root) override {
    if (root < 0 || root >= size_)
      fail<ValueError>("collectives broadcast", "a root in [0, " + std::to_string(size_) + ")", std::to_string(root));
    cuda::DeviceGuard guard(device_);
    after_compute();
    check_nccl(nccl().broadcast(data, data, count, nccl_type(type), root, comm_, stream_), "broadcast");
    NcclRequest done(device_, before_compute());  // waits for the result on destruction
  }
  void allgather(const void* data, size_t count, ElementType type, void* out) override {
    cuda::DeviceGuard guard(device_);
    after_compute();
    check_nccl(nccl().all_gather(data, out, count, nccl_type(type), comm_, stream_), "allgather");
    NcclRequest done(device_, before_compute());  // waits for the result on destruction
  }
  void barrier() override {
    // A one-element allreduce on the device, waited for on the host.
    cuda::DeviceGuard guard(device_);
    void* one = nullptr;
    cuda::check(cudaMallocAsync(&one, 4, stream_), "nccl barrier");
    check_nccl(nccl().all_reduce(one, one, 1, ncclFloat32, ncclSum, comm_, stream_), "barrier");
    cuda::check(cudaFreeAsync(one, stream_), "nccl barrier");
    cuda::check(cudaStreamSynchronize(stream_), "nccl barrier");
  }
  [[noreturn]] void abort(int code) override {
    nccl().comm_abort(comm_);
    std::_Exit(code);
  }

 private:
  // The NCCL stream waits for what the compute stream queued so far (the buffers' producers).
  void after_compute() {
    cudaEvent_t e;
    cuda::check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "nccl event");
    cuda::check(cudaEventRecord(e, cuda::stream(device_)), "nccl event");
    cuda::check(cudaStreamWaitEvent(stream_, e, 0), "nccl event");
    cudaEventDestroy(e);
  }
  // The compute stream waits for the collective; the returned event marks its end.
  cudaEvent_t before_compute() {
    cudaEvent_t e;
    cuda::check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "nccl event");
    cuda::check(cudaEventRecord(e, stream_), "nccl event");
    cuda::check(cudaStreamWaitEvent(cuda::stream(device_), e, 0), "nccl event");
    return e;
  }
  int device_, rank_, size_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(int device, Communicator& bootstrap) {
  return std::make_unique<NcclCommunicator>(device, bootstrap);
}

}  // namespace keras::collectives
