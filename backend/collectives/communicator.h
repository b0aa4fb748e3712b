// Collectives: the operations through which processes training one model exchange tensors.
// A Communicator joins a fixed group of processes (ranks 0..size-1); every rank must call the
// same collectives in the same order with buffers of the same length and element type, as with
// MPI and NCCL, which implement this interface (mpi_communicator.cpp, backend/cuda). Without
// them, or in a program not launched by mpirun, world() is a one-process communicator whose
// collectives are identities, so code written for several processes runs unchanged on one.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/tensor.h"

namespace keras::collectives {

// Element types of the raw-buffer API. float16/bfloat16 are 16-bit storage (reduced in float32
// and rounded back, to nearest even), for gradients compressed to half precision.
enum class ElementType { float32, float64, float16, bfloat16, int32, int64 };
size_t element_size(ElementType t);
std::string element_type_name(ElementType t);
// The ElementType of a Tensor dtype; TypeError for bool.
ElementType element_type_of(DType dtype);

// A collective failed inside the transport (MPI or NCCL reported an error).
class CollectiveError : public Error {
 public:
  using Error::Error;
};

enum class ReduceOp { sum, mean };  // mean: sum divided by size() (integers: truncated)

// A collective started by an *_async call; wait() blocks until its buffer holds the result and
// rethrows the collective's error. Destroying an unfinished request waits for it.
class Request {
 public:
  virtual ~Request() = default;
  virtual void wait() = 0;
  // True when finished (advances the transfer; never blocks).
  virtual bool test() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;  // "local", "mpi", "nccl"
  // Where the buffers live: host memory (local, MPI) or this device's memory (NCCL).
  virtual Device device() const { return Device{}; }

  // In place: every rank's `count` elements at `data` become the reduction over ranks.
  virtual void allreduce(void* data, size_t count, ElementType type, ReduceOp op) = 0;
  // Starts the same in the background; `data` must stay valid until the request finishes.
  virtual std::unique_ptr<Request> allreduce_async(void* data, size_t count, ElementType type, ReduceOp op);
  // Root's `count` elements are copied into every rank's buffer.
  virtual void broadcast(void* data, size_t count, ElementType type, int root) = 0;
  // `out` (count * size() elements) receives every rank's `count` elements, in rank order.
  virtual void allgather(const void* data, size_t count, ElementType type, void* out) = 0;
  virtual void barrier() = 0;
  // Ends every process of the group with `code` (MPI_Abort): the way out when one rank fails and
  // the others would wait forever in their next collective.
  [[noreturn]] virtual void abort(int code) = 0;

  // Tensor forms: contiguous tensors of a numeric dtype on device() (ValueError, TypeError or
  // DeviceError otherwise).
  void allreduce(Tensor& t, ReduceOp op);
  void broadcast(Tensor& t, int root);
  // Concatenation over ranks along axis 0; every rank passes the same shape.
  Tensor allgather(const Tensor& t);
  // Copies of the sums over ranks of `values` (metric states, counters).
  std::vector<double> sum(std::vector<double> values);
};

// The group of every process of this job: MPI's world when the program runs under mpirun (or
// another launcher MPI recognises) and the library was built with MPI, else one process. MPI is
// initialised on the first call and finalised at exit.
Communicator& world();
// True when world() spans more than one process.
bool multi_process();
// Whether this build has MPI (and NCCL) support.
bool built_with_mpi();

// The group a data-parallel distribution trains over (keras::distribution::set_distribution
// sets it); null when training is local. Synchronised BatchNormalization reduces its batch
// statistics over it. The communicator must outlive its time here.
Communicator* training_group();
void set_training_group(Communicator* group);

// A one-process communicator: collectives are identities.
std::unique_ptr<Communicator> make_local_communicator();

// A communicator over NCCL for CUDA device `device` (one per process and GPU), joining every
// process of `bootstrap` (process 0's NCCL unique id travels over it), with its own CUDA stream
// ordered after the device's compute stream. Buffers are device pointers. NotImplementedError in
// a build without CUDA; DeviceError when NCCL cannot be loaded or fails. A collective call.
std::unique_ptr<Communicator> make_nccl_communicator(int device, Communicator& bootstrap);

}  // namespace keras::collectives
