// The profiler: between start(logdir) and stop() it records every op run (name, layer path,
// forward or gradient phase, input shapes, thread, wall time of the kernel, bytes allocated, FLOPs
// where known), every eager layer call, the steps of fit/evaluate/predict with their phases, the
// waits for the next batch, the time of each callback, and the allocators' bytes per step. stop()
// writes it all as a Chrome trace (Perfetto UI, chrome://tracing) where TensorBoard's profile
// plugin looks for runs, and beside it as the XSpace the current plugin reads:
//   <logdir>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<hostname>.trace.json.gz
//   <logdir>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<hostname>.xplane.pb
//
//   keras::profiler::start("logs");
//   model.fit(x, y, {.epochs = 1, .steps_per_epoch = 2});
//   std::string file = keras::profiler::stop();
//   keras::profiler::print_summary();   // per-layer time, share, FLOP/s (profile_summary.h)
//
// or, as in Keras, callbacks::TensorBoard({.log_dir = "logs", .profile_batch = {2, 3}}).
//
// Off, it costs one relaxed atomic load per op, layer call, callback and loop phase, and one clock
// read per step. Thread-safe: ops on any thread (Dataset.map workers too) are recorded with their
// thread id; start and stop may be called from any thread, but not concurrently with each other.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <typeinfo>
#include <vector>

#include "backend/device.h"
#include "backend/shape.h"

namespace keras::profiler {

// Starts recording. StateError when a profile is already running (naming its logdir); ValueError
// for an empty logdir. Nothing is written until stop().
void start(const std::string& logdir);
// Stops, writes the trace and returns its path. StateError when no profile is running. The
// recording stays readable through last_trace() (and print_summary) until the next start.
std::string stop();
bool running();

enum class EventKind {
  op,         // one kernel run (run_op); the time of the kernel alone
  layer,      // one eager Layer call (forward only: a layer's backward is spread over the walk)
  step,       // one batch of fit (mode "train"), evaluate or fit's validation ("test"), predict
  phase,      // a part of a train step: forward, loss, backward, optimizer, metrics
  data_wait,  // waiting for the next batch from the input (a Dataset pipeline or tensor slices)
  callback,   // one callback's hook, named "<Callback>.<hook>"
};
std::string kind_name(EventKind kind);  // "op", "layer", "step", "phase", "data", "callback"

struct Event {
  EventKind kind = EventKind::op;
  std::string name;         // op name, layer name, "train step 3", "forward", "data_wait", ...
  int64_t start_ns = 0;     // steady clock (instrumentation::detail::now_ns)
  int64_t end_ns = 0;
  int64_t tid = 0;          // the OS thread id (gettid)
  std::string layer_path;   // op: the layers it ran under ("" outside any); layer: its own path
  std::string layer_class;  // layer: its class name
  bool gradient = false;    // op: run by the backward walk (layer_path is then the forward's)
  std::string forward_op;   // op in the gradient phase: the forward op being differentiated
  std::vector<Shape> input_shapes;  // op
  std::string dtype;        // op: the first input's dtype ("" without inputs)
  int64_t bytes_allocated = 0;  // op: tensor bytes the thread allocated since its previous op;
                                // layer and step: during the span, on the span's thread
  double flops = 0;         // op: floating-point operations (2 per multiply-add) where known, else 0
  std::string mode;         // step: "train", "test", "predict"
  int epoch = -1;           // step
  int64_t step = -1;        // step: the batch index within the epoch or pass
  bool truncated = false;   // step: still open at stop(), cut there
};

// The bytes of one allocator at one instant; sampled at the start and end of every step.
struct MemorySample {
  int64_t time_ns = 0;
  Device device;
  size_t current_bytes = 0;
  size_t peak_bytes = 0;    // at a step's end: the most held during that step; at its start: current
  size_t cached_bytes = 0;
};

struct Trace {
  std::string logdir;
  std::string run;           // the run directory's name under plugins/profile
  std::string host;
  std::string path;          // the written Chrome trace (<host>.xplane.pb lies beside it)
  int64_t start_ns = 0, end_ns = 0;  // steady clock
  int64_t start_unix_ns = 0;         // the start on the system clock (Unix epoch)
  std::vector<Event> events;          // in recording order (ends, per thread)
  std::vector<MemorySample> memory;   // in time order
  std::map<int64_t, std::string> thread_names;
};

// The recording of the last stop(). StateError before any profile was stopped.
const Trace& last_trace();

// A timed span of the training loops, recorded when a profile runs both at its start and its end.
// Meant for the loops of keras/models and for custom training loops.
class Span {
 public:
  Span(EventKind kind, const char* name);
  ~Span();
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

 private:
  const char* name_;
  EventKind kind_;
  bool on_ = false;
  int64_t start_ = 0;
};

// One callback hook: "<class>.<hook>", with the callback's class name demangled.
class CallbackSpan {
 public:
  CallbackSpan(const std::type_info& callback_type, const char* hook);  // typeid(*callback)
  ~CallbackSpan();
  CallbackSpan(const CallbackSpan&) = delete;
  CallbackSpan& operator=(const CallbackSpan&) = delete;

 private:
  const std::type_info* type_;
  const char* hook_;
  bool on_ = false;
  int64_t start_ = 0;
};

// One batch of a loop. Unlike Span it always notes its start (one clock read), so a profile
// started inside the batch (TensorBoard's profile_batch starts it in on_train_batch_begin) still
// records the step from the profile's start, and stop() inside a batch, on the batch's thread,
// records it cut at the stop.
class StepSpan {
 public:
  StepSpan(const char* mode, int epoch, int64_t step);
  ~StepSpan();
  StepSpan(const StepSpan&) = delete;
  StepSpan& operator=(const StepSpan&) = delete;

  // Read by stop() for the steps still open.
  const char* mode;
  int epoch;
  int64_t step;
  int64_t start_ns;
  int64_t tid;
  uint64_t start_allocated;
  uint64_t closed_in_session = 0;  // the session whose stop() already recorded it
  StepSpan* outer;                 // the thread's enclosing open step (evaluate inside a batch)
};

}  // namespace keras::profiler
