#include "backend/collectives/communicator.h"

#include <atomic>
#include <cstring>

#include "backend/collectives/half_precision.h"
#include "backend/collectives/mpi_world.h"

namespace keras::collectives {

size_t element_size(ElementType t) {
  switch (t) {
    case ElementType::float32: case ElementType::int32: return 4;
    case ElementType::float64: case ElementType::int64: return 8;
    case ElementType::float16: case ElementType::bfloat16: return 2;
  }
  return 0;
}

std::string element_type_name(ElementType t) {
  switch (t) {
    case ElementType::float32: return "float32";
    case ElementType::float64: return "float64";
    case ElementType::float16: return "float16";
    case ElementType::bfloat16: return "bfloat16";
    case ElementType::int32: return "int32";
    case ElementType::int64: return "int64";
  }
  return "?";
}

ElementType element_type_of(DType dtype) {
  switch (dtype) {
    case DType::float32: return ElementType::float32;
    case DType::float64: return ElementType::float64;
    case DType::int32: return ElementType::int32;
    case DType::int64: return ElementType::int64;
    case DType::boolean: break;
  }
  fail<TypeError>("collectives", "a numeric tensor", "dtype " + dtype_name(dtype));
}

namespace {

// The request of a collective that already ran.
class DoneRequest : public Request {
 public:
  void wait() override {}
  bool test() override { return true; }
};

void check_tensor(const Communicator& comm, const Tensor& t, const char* what) {
  const std::string where = std::string("collectives ") + what;
  if (!t.defined()) fail<ValueError>(where, "a defined tensor", "an undefined one");
  if (!t.is_contiguous()) fail<ValueError>(where, "a contiguous tensor", "a strided view", "Pass t.contiguous().");
  if (!(t.device() == comm.device()))
    fail<DeviceError>(where, "a tensor on " + comm.device().str() + " (the " + comm.backend() + " communicator's)",
                      "one on " + t.device().str(), "Move it with .to(device) first.");
}

class LocalCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "local"; }
  void allreduce(void*, size_t, ElementType, ReduceOp) override {}
  void broadcast(void*, size_t, ElementType, int root) override {
    if (root != 0) fail<ValueError>("collectives broadcast", "root 0 (one process)", "root " + std::to_string(root));
  }
  void allgather(const void* data, size_t count, ElementType type, void* out) override {
    if (count) std::memmove(out, data, count * element_size(type));
  }
  void barrier() override {}
  [[noreturn]] void abort(int code) override { std::exit(code); }
};

}  // namespace

std::unique_ptr<Request> Communicator::allreduce_async(void* data, size_t count, ElementType type, ReduceOp op) {
  allreduce(data, count, type, op);
  return std::make_unique<DoneRequest>();
}

void Communicator::allreduce(Tensor& t, ReduceOp op) {
  check_tensor(*this, t, "allreduce");
  allreduce(t.raw_data(), static_cast<size_t>(t.numel()), element_type_of(t.dtype()), op);
  t.bump_version();
}

void Communicator::broadcast(Tensor& t, int root) {
  check_tensor(*this, t, "broadcast");
  broadcast(t.raw_data(), static_cast<size_t>(t.numel()), element_type_of(t.dtype()), root);
  t.bump_version();
}

Tensor Communicator::allgather(const Tensor& t) {
  check_tensor(*this, t, "allgather");
  if (t.rank() == 0) fail<ValueError>("collectives allgather", "a tensor of rank >= 1", "a scalar");
  Shape shape = t.shape();
  shape[0] *= size();
  Tensor out = Tensor::empty(shape, t.dtype(), t.device());
  allgather(t.raw_data(), static_cast<size_t>(t.numel()), element_type_of(t.dtype()), out.raw_data());
  return out;
}

std::vector<double> Communicator::sum(std::vector<double> values) {
  if (!values.empty()) allreduce(values.data(), values.size(), ElementType::float64, ReduceOp::sum);
  return values;
}

std::unique_ptr<Communicator> make_local_communicator() { return std::make_unique<LocalCommunicator>(); }

#ifndef KERAS_HAS_CUDA
std::unique_ptr<Communicator> make_nccl_communicator(int device, Communicator&) {
  fail<NotImplementedError>("collectives NCCL communicator for cuda:" + std::to_string(device), "a build with CUDA",
                            "a CPU-only build", "Rebuild with the CUDA toolkit (and NCCL) present.");
}
#endif

Communicator& world() {
  static std::unique_ptr<Communicator> instance = [] {
    std::unique_ptr<Communicator> mpi = detail::make_mpi_world();
    return mpi ? std::move(mpi) : make_local_communicator();
  }();
  return *instance;
}

bool multi_process() { return world().size() > 1; }

namespace {
std::atomic<Communicator*> g_training_group{nullptr};
}

Communicator* training_group() { return g_training_group.load(std::memory_order_acquire); }
void set_training_group(Communicator* group) { g_training_group.store(group, std::memory_order_release); }

}  // namespace keras::collectives
