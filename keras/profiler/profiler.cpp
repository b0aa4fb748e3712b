// The recording side of the profiler: an instrumentation observer for ops and layer calls, the
// spans of the loops, and the session they all append to. The file is written by trace_file.cpp.
#include "keras/profiler/profiler.h"

#include <cxxabi.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>

#include "backend/cuda.h"
#include "backend/errors.h"
#include "backend/instrumentation.h"
#include "backend/memory_stats.h"
#include "keras/profiler/op_flops.h"
#include "keras/profiler/trace_file.h"

namespace keras::profiler {
namespace {

int64_t now_ns() { return instrumentation::detail::now_ns(); }

struct Session {
  uint64_t id = 0;
  Trace trace;
};

// g_mutex guards g_session and g_last; g_running mirrors "g_session is set" for the cheap check.
std::mutex g_mutex;
std::atomic<bool> g_running{false};
std::atomic<uint64_t> g_session_id{0};
std::unique_ptr<Session> g_session;
std::optional<Trace> g_last;
std::shared_ptr<instrumentation::Observer> g_observer;

struct OpenLayer {
  std::string path;
  std::string class_name;
  int64_t start_ns;
  uint64_t start_allocated;
};

// Per-thread recording state; reset when the thread first records in a new session.
struct ThreadState {
  uint64_t session = 0;
  uint64_t last_allocated = 0;  // thread_allocated_bytes() after the previous op
  std::vector<OpenLayer> layers;
};
thread_local ThreadState t_state;
thread_local StepSpan* t_open_step = nullptr;

int64_t thread_id() {
  thread_local const int64_t tid = static_cast<int64_t>(::syscall(SYS_gettid));
  return tid;
}

std::string thread_name() {
  char name[64] = {};
  if (pthread_getname_np(pthread_self(), name, sizeof name) != 0 || !name[0]) return "thread " + std::to_string(thread_id());
  return name;
}

// The calling thread's state for the running session (nullptr when none runs); names the thread
// in the trace the first time it records.
ThreadState* thread_state() {
  const uint64_t id = g_session_id.load(std::memory_order_acquire);
  if (!g_running.load(std::memory_order_relaxed)) return nullptr;
  ThreadState& t = t_state;
  if (t.session != id) {
    t.session = id;
    t.last_allocated = thread_allocated_bytes();
    t.layers.clear();
    std::lock_guard lock(g_mutex);
    if (g_session && g_session->id == id) g_session->trace.thread_names.emplace(thread_id(), thread_name());
  }
  return &t;
}

void record(Event&& e) {
  std::lock_guard lock(g_mutex);
  if (!g_session) return;  // stopped meanwhile
  g_session->trace.events.push_back(std::move(e));
}

// Samples every allocator in use: the CPU one always, CUDA devices that have allocated.
void sample_memory(int64_t time_ns, bool window_peak) {
  std::vector<Device> devices = {Device::cpu()};
  for (int i = 0, n = cuda::device_count(); i < n; ++i)
    if (cuda::allocator_stats(i).device_mallocs > 0) devices.push_back(Device::cuda(i));
  std::vector<MemorySample> samples;
  for (const Device& d : devices) {
    MemoryStats s = memory_stats(d);
    size_t peak = detail::take_window_peak(d);  // also restarts the window at a step's start
    samples.push_back({time_ns, d, s.current_bytes, window_peak ? std::max(peak, s.current_bytes) : s.current_bytes,
                       s.cached_bytes});
  }
  std::lock_guard lock(g_mutex);
  if (!g_session) return;
  auto& memory = g_session->trace.memory;
  memory.insert(memory.end(), samples.begin(), samples.end());
}

std::string dtype_of(const TensorList& inputs) { return inputs.empty() || !inputs[0].defined() ? "" : dtype_name(inputs[0].dtype()); }

class Recorder final : public instrumentation::Observer {
 public:
  void op_run(const instrumentation::OpRecord& r) override {
    ThreadState* t = thread_state();
    if (!t) return;
    const uint64_t allocated = thread_allocated_bytes();
    Event e;
    e.kind = EventKind::op;
    e.name = r.op.name;
    e.start_ns = r.start_ns;
    e.end_ns = r.end_ns;
    e.tid = thread_id();
    e.layer_path = r.layer_path;
    e.gradient = r.phase == instrumentation::Phase::gradient;
    e.forward_op = r.forward_op;
    e.input_shapes.reserve(r.inputs.size());
    for (const auto& x : r.inputs) e.input_shapes.push_back(x.defined() ? x.shape() : Shape{});
    e.dtype = dtype_of(r.inputs);
    e.bytes_allocated = static_cast<int64_t>(allocated - t->last_allocated);
    e.flops = op_flops(r.op.name, r.inputs, r.outputs, r.attrs);
    t->last_allocated = allocated;
    record(std::move(e));
  }

  void layer_begin(const std::string& path, const std::string& class_name) override {
    ThreadState* t = thread_state();
    if (!t) return;
    t->layers.push_back({path, class_name, now_ns(), thread_allocated_bytes()});
  }

  void layer_end(const std::string& path, const std::string& class_name, const TensorList&) override {
    ThreadState* t = thread_state();
    if (!t) return;
    // A layer that threw never ends: drop whatever was opened above this one.
    auto it = std::find_if(t->layers.rbegin(), t->layers.rend(), [&](const OpenLayer& l) { return l.path == path; });
    if (it == t->layers.rend()) return;  // began before the profile started
    OpenLayer open = std::move(*it);
    t->layers.erase(std::next(it).base(), t->layers.end());
    Event e;
    e.kind = EventKind::layer;
    const size_t slash = path.rfind('/');
    e.name = slash == std::string::npos ? path : path.substr(slash + 1);
    e.start_ns = open.start_ns;
    e.end_ns = now_ns();
    e.tid = thread_id();
    e.layer_path = path;
    e.layer_class = class_name;
    e.bytes_allocated = static_cast<int64_t>(thread_allocated_bytes() - open.start_allocated);
    record(std::move(e));
  }
};

std::string demangled(const std::type_info& type) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(type.name(), nullptr, nullptr, &status), std::free);
  std::string s = status == 0 && name ? name.get() : type.name();
  const size_t colon = s.rfind("::");
  if (colon != std::string::npos) s = s.substr(colon + 2);
  // The built-ins are FooImpl behind a Foo() factory: show the Keras name.
  if (s.size() > 4 && s.ends_with("Impl")) s.resize(s.size() - 4);
  return s;
}

Event step_event(const StepSpan& s, int64_t session_start, int64_t end_ns) {
  Event e;
  e.kind = EventKind::step;
  e.mode = s.mode;
  e.epoch = s.epoch;
  e.step = s.step;
  e.name = std::string(s.mode) + " step " + std::to_string(s.step);
  e.start_ns = std::max(s.start_ns, session_start);  // a profile started inside the batch
  e.end_ns = end_ns;
  e.tid = s.tid;
  e.bytes_allocated = static_cast<int64_t>(thread_allocated_bytes() - s.start_allocated);
  return e;
}

}  // namespace

std::string kind_name(EventKind kind) {
  switch (kind) {
    case EventKind::op: return "op";
    case EventKind::layer: return "layer";
    case EventKind::step: return "step";
    case EventKind::phase: return "phase";
    case EventKind::data_wait: return "data";
    case EventKind::callback: return "callback";
  }
  return "unknown";
}

bool running() { return g_running.load(std::memory_order_relaxed); }

void start(const std::string& logdir) {
  if (logdir.empty())
    fail<ValueError>("profiler::start", "a log directory", "\"\"", "Pass the TensorBoard log_dir (or its train/ run).");
  {
    std::lock_guard lock(g_mutex);
    if (g_session)
      fail<StateError>("profiler::start", "no profile running", "one running into '" + g_session->trace.logdir + "'",
                       "Call keras::profiler::stop() first.");
    auto session = std::make_unique<Session>();
    session->id = g_session_id.load() + 1;
    session->trace.logdir = logdir;
    session->trace.start_ns = now_ns();
    session->trace.start_unix_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                       std::chrono::system_clock::now().time_since_epoch())
                                       .count();
    session->trace.run = run_name_now();
    session->trace.host = host_name();
    g_session = std::move(session);
    g_session_id.store(g_session->id, std::memory_order_release);
    g_running.store(true, std::memory_order_release);
    if (!g_observer) g_observer = std::make_shared<Recorder>();
  }
  instrumentation::attach(g_observer);
  sample_memory(now_ns(), false);
}

std::string stop() {
  uint64_t id = 0;
  int64_t session_start = 0;
  {
    std::lock_guard lock(g_mutex);
    if (!g_session)
      fail<StateError>("profiler::stop", "a running profile", "none", "Call keras::profiler::start(logdir) first.");
    id = g_session->id;
    session_start = g_session->trace.start_ns;
  }
  const int64_t end = now_ns();
  // The steps still open on this thread (stop inside a batch) end here.
  for (StepSpan* s = t_open_step; s; s = s->outer) {
    Event e = step_event(*s, session_start, end);
    e.truncated = true;
    s->closed_in_session = id;
    record(std::move(e));
  }
  sample_memory(end, true);
  instrumentation::detach(g_observer.get());
  std::unique_ptr<Session> session;
  {
    std::lock_guard lock(g_mutex);
    g_running.store(false, std::memory_order_release);
    session = std::move(g_session);
    session->trace.end_ns = end;
    g_last = std::move(session->trace);
  }
  // Kept readable (last_trace, print_summary) even when writing fails.
  std::string path = write_trace(*g_last);
  std::lock_guard lock(g_mutex);
  g_last->path = path;
  return path;
}

const Trace& last_trace() {
  std::lock_guard lock(g_mutex);
  if (!g_last)
    fail<StateError>("profiler::last_trace", "a stopped profile", "none",
                     "Call keras::profiler::start(logdir) and stop() first.");
  return *g_last;
}

Span::Span(EventKind kind, const char* name) : name_(name), kind_(kind) {
  if (!running()) return;
  on_ = thread_state() != nullptr;
  start_ = now_ns();
}

Span::~Span() {
  if (!on_ || !running()) return;
  Event e;
  e.kind = kind_;
  e.name = name_;
  e.start_ns = start_;
  e.end_ns = now_ns();
  e.tid = thread_id();
  record(std::move(e));
}

CallbackSpan::CallbackSpan(const std::type_info& type, const char* hook) : type_(&type), hook_(hook) {
  if (!running()) return;
  on_ = thread_state() != nullptr;
  start_ = now_ns();
}

CallbackSpan::~CallbackSpan() {
  if (!on_ || !running()) return;
  Event e;
  e.kind = EventKind::callback;
  e.name = demangled(*type_) + "." + hook_;
  e.start_ns = start_;
  e.end_ns = now_ns();
  e.tid = thread_id();
  record(std::move(e));
}

StepSpan::StepSpan(const char* mode_, int epoch_, int64_t step_)
    : mode(mode_), epoch(epoch_), step(step_), start_ns(now_ns()), tid(thread_id()),
      start_allocated(thread_allocated_bytes()), outer(t_open_step) {
  t_open_step = this;
  if (running()) sample_memory(start_ns, false);
}

StepSpan::~StepSpan() {
  t_open_step = outer;
  if (!running() || !thread_state() || closed_in_session == g_session_id.load()) return;
  const int64_t end = now_ns();
  int64_t session_start = 0;
  {
    std::lock_guard lock(g_mutex);
    if (!g_session) return;
    session_start = g_session->trace.start_ns;
  }
  record(step_event(*this, session_start, end));
  sample_memory(end, true);
}

}  // namespace keras::profiler
