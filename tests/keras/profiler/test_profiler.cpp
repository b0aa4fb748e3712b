// keras::profiler: the recording of two training steps of a small CNN (C++ side: events, nesting,
// shapes, FLOPs, bytes, memory), the file read back with Python's gzip and json modules
// (tests/keras/profiler/read_trace.py) and TensorBoard's profile plugin, the summary table, the
// state errors, and that nothing is recorded or written while it is off.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "backend/instrumentation.h"
#include "keras/keras.h"
#include "keras/profiler/trace_file.h"
#include "support/python.h"

using namespace keras;
namespace fs = std::filesystem;
namespace L = keras::layers;
using profiler::Event;
using profiler::EventKind;

namespace {

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag) {
    path = fs::temp_directory_path() / ("keras_profiler_" + tag + "_" + std::to_string(getpid()));
    fs::remove_all(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

constexpr int64_t kBatch = 4;

std::shared_ptr<Sequential> small_cnn() {
  auto model = std::make_shared<Sequential>(std::initializer_list<SequentialEntry>{
      L::Input({8, 8, 1}),
      L::Conv2D({.filters = 4, .kernel_size = 3, .activation = "relu"}),
      L::MaxPooling2D({.pool_size = 2}),
      L::Flatten(),
      L::Dense({.units = 3, .activation = "softmax"}),
  });
  model->compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy", .metrics = {"accuracy"}});
  return model;
}

std::pair<Tensor, Tensor> cnn_data(int64_t n) {
  Tensor x = random::normal({n, 8, 8, 1}, 0, 1, 5);
  std::vector<int64_t> y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) y[static_cast<size_t>(i)] = i % 3;
  return {x, Tensor::from_vector(y)};
}

// "sequential/conv2d" for each layer of the model, in order.
std::vector<std::string> layer_paths(const Model& model) {
  std::vector<std::string> out;
  for (const auto& layer : model.layers())
    if (layer->class_name() != "InputLayer") out.push_back(model.name() + "/" + layer->name());
  return out;
}

std::vector<const Event*> select(const profiler::Trace& t, EventKind kind) {
  std::vector<const Event*> out;
  for (const Event& e : t.events)
    if (e.kind == kind) out.push_back(&e);
  return out;
}

const Event* enclosing_step(const profiler::Trace& t, const Event& e) {
  for (const Event* s : select(t, EventKind::step))
    if (s->tid == e.tid && s->start_ns <= e.start_ns && e.end_ns <= s->end_ns) return s;
  return nullptr;
}

// Two training steps of the CNN, profiled into `dir`.
std::shared_ptr<Sequential> profile_two_steps(const fs::path& dir, std::string& file) {
  auto model = small_cnn();
  auto [x, y] = cnn_data(2 * kBatch);
  model->fit(x, y, {.batch_size = 1, .epochs = 1, .verbose = 0, .shuffle = false, .steps_per_epoch = 1});  // builds
  profiler::start(dir.string());
  EXPECT_TRUE(profiler::running());
  model->fit(x, y, {.batch_size = kBatch, .epochs = 1, .verbose = 0, .shuffle = false});
  file = profiler::stop();
  EXPECT_FALSE(profiler::running());
  return model;
}

}  // namespace

TEST(Profiler, StartTwiceOrStopWithoutStartIsAStateErrorNamingTheState) {
  TempDir dir("state");
  EXPECT_THROW(profiler::start(""), ValueError);
  try {
    profiler::stop();
    FAIL() << "stop without start";
  } catch (const StateError& e) {
    EXPECT_NE(std::string(e.what()).find("expected a running profile, got none"), std::string::npos) << e.what();
  }
  profiler::start(dir.path.string());
  try {
    profiler::start(dir.path.string());
    ADD_FAILURE() << "start twice";
  } catch (const StateError& e) {
    EXPECT_NE(std::string(e.what()).find("got one running into '" + dir.path.string() + "'"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(profiler::running());
  profiler::stop();
  EXPECT_FALSE(profiler::running());
  EXPECT_THROW(profiler::stop(), StateError);
}

TEST(Profiler, TwoTrainingStepsOfACnnRecordEveryLayersOpsInsideTheirStep) {
  TempDir dir("cnn");
  std::string file;
  auto model = profile_two_steps(dir.path, file);
  const profiler::Trace& t = profiler::last_trace();

  // The file: <logdir>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.trace.json.gz
  EXPECT_EQ(t.path, file);
  ASSERT_TRUE(fs::exists(file));
  const fs::path run_dir = fs::path(file).parent_path();
  EXPECT_EQ(run_dir.parent_path(), dir.path / "plugins" / "profile");
  EXPECT_EQ(run_dir.filename().string(), t.run);
  EXPECT_EQ(t.run.size(), 19u) << t.run;
  EXPECT_EQ(fs::path(file).filename().string(), profiler::host_name() + ".trace.json.gz");

  // Two train steps, each with its phases, data waits before them and callback hooks.
  auto steps = select(t, EventKind::step);
  ASSERT_EQ(steps.size(), 2u);
  for (int64_t i = 0; i < 2; ++i) {
    EXPECT_EQ(steps[static_cast<size_t>(i)]->mode, "train");
    EXPECT_EQ(steps[static_cast<size_t>(i)]->epoch, 0);
    EXPECT_EQ(steps[static_cast<size_t>(i)]->step, i);
    EXPECT_FALSE(steps[static_cast<size_t>(i)]->truncated);
    EXPECT_EQ(steps[static_cast<size_t>(i)]->name, "train step " + std::to_string(i));
  }
  std::map<std::string, int> phases;
  for (const Event* e : select(t, EventKind::phase)) {
    ++phases[e->name];
    EXPECT_NE(enclosing_step(t, *e), nullptr) << e->name;
  }
  for (const char* p : {"forward", "loss", "backward", "optimizer", "metrics"}) EXPECT_EQ(phases[p], 2) << p;
  EXPECT_EQ(select(t, EventKind::data_wait).size(), 3u);  // two batches, then the end of the data
  std::set<std::string> hooks;
  for (const Event* e : select(t, EventKind::callback)) hooks.insert(e->name);
  EXPECT_TRUE(hooks.count("History.on_train_batch_end")) << hooks.size();
  EXPECT_TRUE(hooks.count("History.on_epoch_end"));

  // Every layer: one call per step, inside it; its forward ops (and backward ops, for those that
  // have any) inside a step of the same thread.
  const std::vector<std::string> paths = layer_paths(*model);
  ASSERT_EQ(paths.size(), 4u);
  for (const std::string& path : paths) {
    SCOPED_TRACE(path);
    int calls = 0, forward = 0, gradient = 0;
    for (const Event& e : t.events) {
      if (e.layer_path != path) continue;
      if (e.kind == EventKind::layer) ++calls;
      if (e.kind == EventKind::op) (e.gradient ? gradient : forward)++;
      if (e.kind == EventKind::layer || e.kind == EventKind::op) {
        EXPECT_NE(enclosing_step(t, e), nullptr) << e.name;
      }
    }
    EXPECT_EQ(calls, 2);
    if (path.ends_with("flatten")) continue;  // a view: no op of its own
    EXPECT_GE(forward, 2);
    EXPECT_GE(gradient, 2);
  }

  // The conv2d op: shapes, FLOPs, thread, bytes (its output at least).
  const Event* conv = nullptr;
  const Event* conv_grad = nullptr;
  for (const Event& e : t.events) {
    if (e.kind != EventKind::op || e.layer_path != paths[0]) continue;
    if (!e.gradient && e.name == "conv2d" && !conv) conv = &e;
    if (e.gradient && e.name == "conv2d_backward_weights" && !conv_grad) conv_grad = &e;
  }
  ASSERT_NE(conv, nullptr);
  ASSERT_GE(conv->input_shapes.size(), 2u);
  EXPECT_EQ(conv->input_shapes[0], (Shape{kBatch, 8, 8, 1}));
  EXPECT_EQ(conv->input_shapes[1], (Shape{3, 3, 1, 4}));
  EXPECT_EQ(conv->dtype, "float32");
  EXPECT_DOUBLE_EQ(conv->flops, 2.0 * kBatch * 6 * 6 * 4 * 3 * 3 * 1);
  EXPECT_GE(conv->bytes_allocated, kBatch * 6 * 6 * 4 * 4);
  EXPECT_EQ(conv->tid, steps[0]->tid);
  EXPECT_LE(conv->start_ns, conv->end_ns);
  ASSERT_NE(conv_grad, nullptr);
  EXPECT_EQ(conv_grad->forward_op, "conv2d");
  EXPECT_DOUBLE_EQ(conv_grad->flops, conv->flops);
  EXPECT_TRUE(t.thread_names.count(steps[0]->tid));

  // Memory: sampled at each step's start and end, the end's peak at least what is held.
  ASSERT_GE(t.memory.size(), 4u);
  for (const auto& m : t.memory) {
    EXPECT_EQ(m.device, Device::cpu());
    EXPECT_GE(m.peak_bytes, m.current_bytes);
    EXPECT_GT(m.current_bytes, 0u);
  }
}

TEST(Profiler, TheFileReadsBackWithPythonsJsonAndNestsEveryLayersOpsUnderItsStep) {
  TempDir dir("python");
  std::string file;
  auto model = profile_two_steps(dir.path, file);
  std::vector<std::string> args = {"check", file};
  std::vector<std::string> paths = layer_paths(*model);
  for (const auto& p : paths)
    if (!p.ends_with("flatten")) args.push_back(p);
  std::string skip;
  const std::string out = test_support::run_python_file(
      (fs::path(KERAS_SOURCE_DIR) / "tests/keras/profiler/read_trace.py").string(), args, skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_FALSE(out.empty());
  const auto report = nlohmann::json::parse(out);
  EXPECT_EQ(report["steps"], nlohmann::json::parse(R"([["train", 0], ["train", 1]])"));
  EXPECT_EQ(report["ops"], report["ops_in_steps"]) << "every op of the profile ran inside a train step";
  for (const auto& p : paths) {
    if (p.ends_with("flatten")) continue;
    SCOPED_TRACE(p);
    EXPECT_EQ(report["layers"][p]["layer_events"], 2);
    EXPECT_GE(report["layers"][p]["gradient"].get<int>(), 2);
  }
  EXPECT_GT(report["layers"][paths[0]]["flops"].get<double>(), 0);
  for (const char* cat : {"callback", "data", "layer", "op", "op,gradient", "phase", "step"})
    EXPECT_TRUE(std::find(report["categories"].begin(), report["categories"].end(), cat) != report["categories"].end())
        << cat << " in " << report["categories"].dump();
  EXPECT_EQ(report["memory_keys"], nlohmann::json::parse(R"(["cached_bytes", "current_bytes", "peak_bytes"])"));
}

TEST(Profiler, TensorBoardsProfilePluginFindsTheRunAndConvertsItsXplane) {
  TempDir dir("plugin");
  std::string file;
  auto model = profile_two_steps(dir.path, file);
  std::vector<std::string> args = {"plugin", dir.path.string()};
  const std::vector<std::string> paths = layer_paths(*model);
  for (const auto& p : paths)
    if (!p.ends_with("flatten")) args.push_back(p);
  std::string skip;
  const std::string out = test_support::run_python_file(
      (fs::path(KERAS_SOURCE_DIR) / "tests/keras/profiler/read_trace.py").string(), args, skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_FALSE(out.empty());
  const auto report = nlohmann::json::parse(out);
  const std::string run = profiler::last_trace().run;
  ASSERT_TRUE(report["runs"].contains(run)) << report.dump();
  const auto& r = report["runs"][run];
  EXPECT_EQ(r["dir"], fs::path(file).parent_path().string());
  const std::string host = profiler::host_name();
  EXPECT_EQ(r["files"], nlohmann::json::array({host + ".trace.json.gz", host + ".xplane.pb"}));
  EXPECT_TRUE(std::find(r["tools"].begin(), r["tools"].end(), "trace_viewer@") != r["tools"].end()) << r["tools"];
  // The plugin's own conversion of the .xplane.pb to the trace viewer: two steps, every layer's
  // forward and backward ops inside them.
  const auto& tv = r["trace_viewer"];
  EXPECT_EQ(tv["steps"].size(), 2u) << tv.dump();
  EXPECT_EQ(tv["ops"], tv["ops_in_steps"]);
  for (const auto& p : paths) {
    if (p.ends_with("flatten")) continue;
    SCOPED_TRACE(p);
    EXPECT_EQ(tv["layers"][p]["layer_events"], 2);
    EXPECT_GE(tv["layers"][p]["forward"].get<int>(), 2);
    EXPECT_GE(tv["layers"][p]["gradient"].get<int>(), 2);
  }
}

TEST(Profiler, SummaryTableGivesEachLayerItsTimeShareAndFlopRate) {
  TempDir dir("summary");
  std::string file;
  auto model = profile_two_steps(dir.path, file);
  const auto rows = profiler::layer_profile(profiler::last_trace());
  const std::vector<std::string> paths = layer_paths(*model);
  std::map<std::string, profiler::LayerProfile> by_path;
  double total = 0;
  for (const auto& r : rows) by_path[r.path] = r, total += r.seconds();
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_GE(rows[i - 1].seconds(), rows[i].seconds());
  ASSERT_TRUE(by_path.count(paths[0]));
  EXPECT_EQ(by_path[paths[0]].class_name, "Conv2D");
  EXPECT_EQ(by_path[paths[0]].calls, 2);
  EXPECT_GT(by_path[paths[0]].forward_seconds, 0);
  EXPECT_GT(by_path[paths[0]].backward_seconds, 0);
  EXPECT_GT(by_path[paths[0]].flops_per_second(), 0);
  EXPECT_EQ(by_path[paths[1]].class_name, "MaxPooling2D");
  EXPECT_EQ(by_path[paths[1]].flops_per_second(), 0);  // pooling FLOPs are not counted
  EXPECT_TRUE(by_path.count("(outside layers)"));      // loss, optimizer, metrics
  EXPECT_GT(total, 0);

  const std::string table = profiler::summary();
  EXPECT_NE(table.find("Layer"), std::string::npos) << table;
  EXPECT_NE(table.find("FLOP/s"), std::string::npos);
  EXPECT_NE(table.find(paths[0]), std::string::npos);
  EXPECT_NE(table.find("Conv2D"), std::string::npos);
  EXPECT_NE(table.find("Steps (train): 2"), std::string::npos) << table;
  EXPECT_NE(table.find("Peak memory (cpu)"), std::string::npos) << table;
  std::ostringstream printed;
  profiler::print_summary(printed, 2);
  EXPECT_NE(printed.str().find("more layers"), std::string::npos) << printed.str();
}

TEST(Profiler, OpsOfOtherThreadsCarryTheirThreadAndName) {
  TempDir dir("threads");
  profiler::start(dir.path.string());
  int64_t worker_tid = 0;
  std::thread worker([&] {
    worker_tid = static_cast<int64_t>(gettid());
    ops::add(Tensor::ones({3}), Tensor::ones({3}));
  });
  worker.join();
  ops::add(Tensor::ones({2}), Tensor::ones({2}));
  profiler::stop();
  const auto& t = profiler::last_trace();
  std::set<int64_t> tids;
  for (const Event& e : t.events)
    if (e.kind == EventKind::op && e.name == "add") tids.insert(e.tid);
  EXPECT_EQ(tids, (std::set<int64_t>{worker_tid, static_cast<int64_t>(gettid())}));
  EXPECT_TRUE(t.thread_names.count(worker_tid));
}

TEST(Profiler, ADatasetPipelinesWaitsAndItsMapWorkersOpsAreRecorded) {
  TempDir dir("pipeline");
  auto model = small_cnn();
  auto [x, y] = cnn_data(4 * kBatch);
  // The map runs an op on the pipeline's worker threads, for every element.
  auto ds = data::Dataset::from_tensor_slices({x, y})
                .map([](const data::Element& e) { return data::Element{ops::multiply(e[0], 0.5), e[1]}; }, 2)
                .batch(kBatch);
  profiler::start(dir.path.string());
  model->fit(ds, {.epochs = 1, .verbose = 0});
  profiler::stop();
  const auto& t = profiler::last_trace();
  const auto steps = select(t, EventKind::step);
  ASSERT_EQ(steps.size(), 4u);
  const auto waits = select(t, EventKind::data_wait);
  EXPECT_EQ(waits.size(), 5u);  // four batches, then the end of the data
  for (const Event* w : waits) {
    EXPECT_EQ(w->tid, steps[0]->tid);  // the loop waits on its own thread, outside the steps
    EXPECT_EQ(enclosing_step(t, *w), nullptr);
  }
  std::set<int64_t> map_threads;
  for (const Event& e : t.events)
    if (e.kind == EventKind::op && e.name == "multiply_scalar" && e.layer_path.empty() && e.tid != steps[0]->tid)
      map_threads.insert(e.tid);
  EXPECT_FALSE(map_threads.empty()) << "the map's multiply ops, on its worker threads";
  for (int64_t tid : map_threads) EXPECT_TRUE(t.thread_names.count(tid)) << tid;
}

TEST(Profiler, OffRecordsNothingAndWritesNothing) {
  TempDir dir("off");
  // Another profile, stopped: what runs after it adds no event and no file.
  profiler::start(dir.path.string());
  ops::add(Tensor::ones({2}), Tensor::ones({2}));
  const std::string file = profiler::stop();
  const size_t events = profiler::last_trace().events.size();
  auto model = small_cnn();
  auto [x, y] = cnn_data(2 * kBatch);
  model->fit(x, y, {.batch_size = kBatch, .epochs = 1, .verbose = 0});
  EXPECT_EQ(profiler::last_trace().events.size(), events);
  EXPECT_FALSE(instrumentation::active());  // the profiler's observer is detached
  size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir.path)) files += entry.is_regular_file();
  EXPECT_EQ(files, 2u) << "only the stopped profile's trace and xplane beside " << file;
}

TEST(Profiler, AnUnwritableLogdirFailsStopWithAnIOErrorAndKeepsTheRecording) {
  TempDir dir("unwritable");
  fs::create_directories(dir.path);
  const fs::path blocker = dir.path / "a_file";
  { std::ofstream(blocker) << "not a directory"; }
  profiler::start(blocker.string());
  ops::add(Tensor::ones({2}), Tensor::ones({2}));
  try {
    profiler::stop();
    ADD_FAILURE() << "stop into a file";
  } catch (const IOError& e) {
    EXPECT_NE(std::string(e.what()).find(blocker.string()), std::string::npos) << e.what();
  }
  EXPECT_FALSE(profiler::running());
  EXPECT_FALSE(profiler::last_trace().events.empty());
  EXPECT_TRUE(profiler::last_trace().path.empty());
}

TEST(Profiler, TraceJsonEscapesNamesAndKeepsNanoseconds) {
  profiler::Trace t;
  t.start_ns = 1000;
  t.end_ns = 5000;
  t.host = "h";
  t.run = "r";
  Event e;
  e.kind = EventKind::layer;
  e.name = "a\"b\\c\n";
  e.start_ns = 2234;
  e.end_ns = 3235;
  e.tid = 7;
  t.events.push_back(e);
  const auto doc = nlohmann::json::parse(profiler::trace_json(t));
  const auto& x = doc["traceEvents"].back();
  EXPECT_EQ(x["name"], "a\"b\\c\n");
  EXPECT_DOUBLE_EQ(x["ts"].get<double>(), 1.234);
  EXPECT_DOUBLE_EQ(x["dur"].get<double>(), 1.001);
  EXPECT_EQ(x["tid"], 7);
  EXPECT_EQ(doc["displayTimeUnit"], "ns");
}

TEST(Profiler, GzipRoundTripsThroughZlibsGzipReader) {
  std::string text;
  for (int i = 0; i < 20000; ++i) text += std::to_string(i * 7919 % 1000) + ",";
  const std::string gz = profiler::gzip_compress(text);
  ASSERT_GE(gz.size(), 18u);
  EXPECT_EQ(static_cast<unsigned char>(gz[0]), 0x1f);  // the gzip magic
  EXPECT_EQ(static_cast<unsigned char>(gz[1]), 0x8b);
  z_stream s{};
  ASSERT_EQ(inflateInit2(&s, 16 + MAX_WBITS), Z_OK);
  std::string back(text.size() + 16, '\0');
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  s.avail_in = static_cast<uInt>(gz.size());
  s.next_out = reinterpret_cast<Bytef*>(back.data());
  s.avail_out = static_cast<uInt>(back.size());
  EXPECT_EQ(inflate(&s, Z_FINISH), Z_STREAM_END);
  back.resize(back.size() - s.avail_out);
  inflateEnd(&s);
  EXPECT_EQ(back, text);
}
