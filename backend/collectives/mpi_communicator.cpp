// Communicator over MPI (Open MPI here). Compiled to a stub returning no world when the build
// has no MPI (KERAS_HAVE_MPI undefined).
#include "backend/collectives/mpi_world.h"

#include <cstdlib>

#ifdef KERAS_HAVE_MPI
// The C API only: the deprecated C++ bindings warn and add nothing.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "backend/collectives/half_precision.h"
#endif

namespace keras::collectives {

#ifndef KERAS_HAVE_MPI
bool built_with_mpi() { return false; }
namespace detail {
std::unique_ptr<Communicator> make_mpi_world() { return nullptr; }
}  // namespace detail
#else
bool built_with_mpi() { return true; }

namespace {

// MPI has no 16-bit float sums: these user operations add in float32 and round back.
void sum_bfloat16(void* in, void* inout, int* len, MPI_Datatype*) {
  add_bfloat16(static_cast<const uint16_t*>(in), static_cast<uint16_t*>(inout), static_cast<size_t>(*len));
}
void sum_float16(void* in, void* inout, int* len, MPI_Datatype*) {
  add_float16(static_cast<const uint16_t*>(in), static_cast<uint16_t*>(inout), static_cast<size_t>(*len));
}

void check(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  fail<CollectiveError>(std::string("collectives (mpi) ") + what, "success", std::string(text, static_cast<size_t>(length)));
}

MPI_Datatype mpi_type(ElementType t) {
  switch (t) {
    case ElementType::float32: return MPI_FLOAT;
    case ElementType::float64: return MPI_DOUBLE;
    case ElementType::int32: return MPI_INT32_T;
    case ElementType::int64: return MPI_INT64_T;
    case ElementType::float16: case ElementType::bfloat16: return MPI_UINT16_T;
  }
  return MPI_BYTE;
}

// MPI counts are int: larger buffers go in chunks.
constexpr size_t kMaxChunk = size_t{1} << 30;

void divide(void* data, size_t count, ElementType type, int size) {
  const double f = 1.0 / size;
  switch (type) {
    case ElementType::float32: for (size_t i = 0; i < count; ++i) static_cast<float*>(data)[i] *= static_cast<float>(f); break;
    case ElementType::float64: for (size_t i = 0; i < count; ++i) static_cast<double*>(data)[i] *= f; break;
    case ElementType::int32: for (size_t i = 0; i < count; ++i) static_cast<int32_t*>(data)[i] /= size; break;
    case ElementType::int64: for (size_t i = 0; i < count; ++i) static_cast<int64_t*>(data)[i] /= size; break;
    case ElementType::float16: scale_float16(static_cast<uint16_t*>(data), count, static_cast<float>(f)); break;
    case ElementType::bfloat16: scale_bfloat16(static_cast<uint16_t*>(data), count, static_cast<float>(f)); break;
  }
}

class MpiRequest : public Request {
 public:
  MpiRequest(std::vector<MPI_Request> requests, void* data, size_t count, ElementType type, ReduceOp op, int size)
      : requests_(std::move(requests)), data_(data), count_(count), type_(type), op_(op), size_(size) {}
  ~MpiRequest() override {
    if (!done_) MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
  }
  void wait() override {
    if (done_) return;
    check(MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE), "wait");
    finish();
  }
  bool test() override {
    if (done_) return true;
    int flag = 0;
    check(MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &flag, MPI_STATUSES_IGNORE), "test");
    if (flag) finish();
    return done_;
  }

 private:
  void finish() {
    done_ = true;
    if (op_ == ReduceOp::mean) divide(data_, count_, type_, size_);
  }
  std::vector<MPI_Request> requests_;
  void* data_;
  size_t count_;
  ElementType type_;
  ReduceOp op_;
  int size_;
  bool done_ = false;
};

class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "init");
      owns_mpi_ = true;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MPI_Op_create(&sum_bfloat16, 1, &bf16_sum_);
    MPI_Op_create(&sum_float16, 1, &f16_sum_);
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    MPI_Op_free(&bf16_sum_);
    MPI_Op_free(&f16_sum_);
    MPI_Comm_free(&comm_);
    if (owns_mpi_) MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }

  void allreduce(void* data, size_t count, ElementType type, ReduceOp op) override {
    allreduce_async(data, count, type, op)->wait();
  }

  std::unique_ptr<Request> allreduce_async(void* data, size_t count, ElementType type, ReduceOp op) override {
    std::vector<MPI_Request> requests;
    char* bytes = static_cast<char*>(data);
    for (size_t at = 0; at < count; at += kMaxChunk) {
      const size_t n = std::min(kMaxChunk, count - at);
      MPI_Request r;
      check(MPI_Iallreduce(MPI_IN_PLACE, bytes + at * element_size(type), static_cast<int>(n), mpi_type(type),
                           sum_op(type), comm_, &r), "allreduce");
      requests.push_back(r);
    }
    return std::make_unique<MpiRequest>(std::move(requests), data, count, type, op, size_);
  }

  void broadcast(void* data, size_t count, ElementType type, int root) override {
    if (root < 0 || root >= size_)
      fail<ValueError>("collectives broadcast", "a root in [0, " + std::to_string(size_) + ")", std::to_string(root));
    char* bytes = static_cast<char*>(data);
    for (size_t at = 0; at < count; at += kMaxChunk)
      check(MPI_Bcast(bytes + at * element_size(type), static_cast<int>(std::min(kMaxChunk, count - at)),
                      mpi_type(type), root, comm_), "broadcast");
  }

  void allgather(const void* data, size_t count, ElementType type, void* out) override {
    if (count > kMaxChunk)
      fail<ValueError>("collectives allgather", "at most 2^30 elements per rank", std::to_string(count));
    check(MPI_Allgather(data, static_cast<int>(count), mpi_type(type), out, static_cast<int>(count), mpi_type(type),
                        comm_), "allgather");
  }

  void barrier() override { check(MPI_Barrier(comm_), "barrier"); }

  [[noreturn]] void abort(int code) override {
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

 private:
  MPI_Op sum_op(ElementType type) const {
    if (type == ElementType::bfloat16) return bf16_sum_;
    if (type == ElementType::float16) return f16_sum_;
    return MPI_SUM;
  }
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Op bf16_sum_ = MPI_OP_NULL, f16_sum_ = MPI_OP_NULL;
  int rank_ = 0, size_ = 1;
  bool owns_mpi_ = false;
};

bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(var)) return true;
  return false;
}

}  // namespace

namespace detail {
std::unique_ptr<Communicator> make_mpi_world() {
  if (!launched_by_mpi()) return nullptr;
  return std::make_unique<MpiCommunicator>();
}
}  // namespace detail
#endif

}  // namespace keras::collectives
