// Tensor dumps (keras/debugging/tensor_dump.h) and reading them back (dump_reader.h, the
// tensor-dump tool): chosen layers' outputs and gradients for chosen steps as .npy files that
// NumPy reads with identical values, an index naming them, and list/compare tensor by tensor.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "keras/keras.h"
#include "support/python.h"

using namespace keras;
namespace L = keras::layers;
namespace fs = std::filesystem;
using ::testing::HasSubstr;

namespace {

std::vector<fs::path>& made_dirs() {
  static std::vector<fs::path> dirs;
  return dirs;
}

// Removes every dump folder the tests made, once they have all run.
class RemoveDumps : public ::testing::Environment {
 public:
  void TearDown() override {
    for (const auto& d : made_dirs()) fs::remove_all(d);
  }
};
[[maybe_unused]] auto* const kRemoveDumps = ::testing::AddGlobalTestEnvironment(new RemoveDumps);

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("keras_dump_" + std::to_string(getpid()) + "_" + name);
  fs::remove_all(d);
  made_dirs().push_back(d);
  return d;
}

// Input(3) -> dense_a (relu) -> dense_b, weights fixed by `scale`.
std::shared_ptr<Sequential> small_model(float scale = 1.f) {
  auto m = std::make_shared<Sequential>(
      std::initializer_list<SequentialEntry>{L::Input({3}), L::Dense({.units = 4, .activation = "relu", .name = "dense_a"}),
                                             L::Dense({.units = 2, .name = "dense_b"})},
      "net");
  std::vector<float> ka(12), kb(8);
  for (size_t i = 0; i < ka.size(); ++i) ka[i] = scale * (static_cast<float>(i % 5) - 1.5f) / 4;
  for (size_t i = 0; i < kb.size(); ++i) kb[i] = scale * (static_cast<float>(i % 3) - 0.5f) / 2;
  m->get_layer("dense_a")->set_weights({Tensor::from_vector(ka, {3, 4}), Tensor::full({4}, 0.1)});
  m->get_layer("dense_b")->set_weights({Tensor::from_vector(kb, {4, 2}), Tensor::zeros({2})});
  m->compile({.optimizer = optimizers::SGD({.learning_rate = 0.05}), .loss = "mse"});
  return m;
}

const Tensor kX = Tensor::from_vector(std::vector<float>{1, 2, 3, -1, 0.5f, 2, 0, 1, -3, 2, 2, 2}, {4, 3});
const Tensor kY = Tensor::from_vector(std::vector<float>{1, 0, 0, 1, 1, 1, 0, 0}, {4, 2});

std::string hex_of(const Tensor& t) {
  std::string out;
  char buf[3];
  const auto* p = static_cast<const unsigned char*>(t.raw_data());
  for (size_t i = 0; i < t.nbytes(); ++i) std::snprintf(buf, sizeof buf, "%02x", p[i]), out += buf;
  return out;
}

// Runs one epoch of two steps with a dump of every layer's outputs and gradients at step 1.
fs::path dump_training(const std::string& name, float scale, debugging::DumpOptions extra = {}) {
  const fs::path dir = fresh_dir(name);
  auto m = small_model(scale);
  extra.dump_root = dir.string();
  {
    auto d = debugging::dump(extra);
    m->fit(kX, kY, {.batch_size = 2, .epochs = 1, .verbose = 0, .shuffle = false});
  }
  return dir;
}

}  // namespace

TEST(TensorDump, WritesChosenOutputsAndGradientsWithAnIndex) {
  const fs::path dir = dump_training("index", 1.f, {.gradients = true, .steps = {1}});
  const auto entries = debugging::read_dump_index(dir.string());
  std::vector<std::string> keys;
  for (const auto& e : entries) keys.push_back(e.key());
  // Forward in call order (the model's own call ends last), then the gradients as the backward
  // walk reaches each output (the last layer's first; the model's output is dense_b's tensor).
  EXPECT_EQ(keys, (std::vector<std::string>{
                      "net/dense_a/output:0 @ train epoch 0 step 1", "net/dense_b/output:0 @ train epoch 0 step 1",
                      "net/output:0 @ train epoch 0 step 1", "net/dense_b/gradient:0 @ train epoch 0 step 1",
                      "net/gradient:0 @ train epoch 0 step 1", "net/dense_a/gradient:0 @ train epoch 0 step 1"}));
  const auto& a = entries[0];
  EXPECT_EQ(a.layer, "net/dense_a");
  EXPECT_EQ(a.class_name, "Dense");
  EXPECT_EQ(a.kind, "output");
  EXPECT_EQ(a.shape, (Shape{2, 4}));
  EXPECT_EQ(a.dtype, "float32");
  EXPECT_EQ(a.file, "train_e0_s1/net.dense_a.output_0.npy");
  // The values: dense_a's output on batch 1, with the weights after step 0's update, equals what
  // the model's dense_a gives for those rows when rebuilt with those weights; simpler and as
  // strong: dense_b's dumped output is dense_b applied to dense_a's dumped output.
  auto m = small_model();
  m->fit(kX.slice_batch(0, 2), kY.slice_batch(0, 2), {.batch_size = 2, .verbose = 0, .shuffle = false});  // step 0
  Tensor out_a = debugging::load_dump_tensor(dir.string(), entries[0]);
  Tensor out_b = debugging::load_dump_tensor(dir.string(), entries[1]);
  // Recomputed under a tape, as the training step computed it: outside one, Dense may run the
  // kernel chosen for inference (backend/cpu/dense_panels.h), equal only up to float32 rounding.
  GradientTape tape;
  Tensor want_a = (*m->get_layer("dense_a"))(kX.slice_batch(2, 4));
  EXPECT_EQ(hex_of(out_a), hex_of(want_a.contiguous()));
  EXPECT_EQ(hex_of(out_b), hex_of((*m->get_layer("dense_b"))(want_a).contiguous()));
  // d(mse)/d(prediction) = 2 (pred - y) / (batch * units).
  Tensor g_b = debugging::load_dump_tensor(dir.string(), entries[3]);
  auto gv = g_b.to_vector<float>(), pv = out_b.to_vector<float>(), yv = kY.slice_batch(2, 4).contiguous().to_vector<float>();
  for (size_t i = 0; i < gv.size(); ++i) EXPECT_NEAR(gv[i], 2 * (pv[i] - yv[i]) / 4, 1e-6) << i;
}

TEST(TensorDump, FiltersLayersStepsAndModes) {
  const fs::path dir = dump_training("filter", 1.f, {.layers = {"dense_b"}, .steps = {0}});
  auto entries = debugging::read_dump_index(dir.string());
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].key(), "net/dense_b/output:0 @ train epoch 0 step 0");
  // A path glob; predict steps only.
  const fs::path dir2 = fresh_dir("glob");
  auto m = small_model();
  {
    auto d = debugging::dump({.dump_root = dir2.string(), .layers = {"net/dense_*"}, .modes = {"predict"}});
    m->fit(kX, kY, {.batch_size = 4, .verbose = 0});
    m->predict(kX, {.batch_size = 4, .verbose = 0});
    EXPECT_EQ(d.size(), 2);
  }
  entries = debugging::read_dump_index(dir2.string());
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[1].key(), "net/dense_b/output:0 @ predict step 0");
  EXPECT_THROW(debugging::dump({}), ValueError);
}

TEST(TensorDump, CallbackDumpsOneFit) {
  const fs::path dir = fresh_dir("callback");
  auto m = small_model();
  m->fit(kX, kY, {.batch_size = 2, .epochs = 2, .verbose = 0,
                  .callbacks = {debugging::DumpTensors({.dump_root = dir.string(), .layers = {"dense_a"},
                                                        .epochs = {1}})},
                  .shuffle = false});
  auto entries = debugging::read_dump_index(dir.string());
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].key(), "net/dense_a/output:0 @ train epoch 1 step 0");
  EXPECT_EQ(entries[1].key(), "net/dense_a/output:0 @ train epoch 1 step 1");
  // Nothing is written once fit has ended.
  m->predict(kX, {.verbose = 0});
  EXPECT_EQ(debugging::read_dump_index(dir.string()).size(), 2u);
}

TEST(TensorDump, ASharedLayerIsDumpedOncePerCall) {
  auto in = L::Input({3});
  auto shared = L::Dense({.units = 3, .name = "shared"});
  auto out = (*shared)((*shared)(in));
  Model m(in, out, "twice");
  const fs::path dir = fresh_dir("shared");
  {
    auto d = debugging::dump({.dump_root = dir.string(), .layers = {"shared"}});
    m.predict(kX, {.batch_size = 4, .verbose = 0});
  }
  const auto entries = debugging::read_dump_index(dir.string());
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].name, "twice/shared/output:0");
  EXPECT_EQ(entries[1].name, "twice/shared/output:0#1");
  EXPECT_EQ(entries[1].call, 1);
  EXPECT_EQ(entries[1].file, "predict_s0/twice.shared.output_0.call_1.npy");
  // The second call's input is the first call's output.
  const Tensor first = debugging::load_dump_tensor(dir.string(), entries[0]);
  EXPECT_EQ(hex_of(debugging::load_dump_tensor(dir.string(), entries[1])), hex_of((*shared)(first).contiguous()));
}

TEST(TensorDump, NumPyReadsTheFilesWithIdenticalValues) {
  const fs::path dir = dump_training("numpy", 1.f, {.gradients = true});
  std::string skip;
  const std::string out = test_support::run_python(
      "import json, os\n"
      "d = sys.argv[1]\n"
      "idx = json.load(open(os.path.join(d, 'index.json')))\n"
      "assert idx['format'] == 'keras-tensor-dump'\n"
      "for e in idx['tensors']:\n"
      "    a = numpy.load(os.path.join(d, e['file']))\n"
      "    assert list(a.shape) == e['shape'] and str(a.dtype) == e['dtype'], (a.shape, a.dtype, e)\n"
      "    print(e['name'], e['step'], a.astype('<f4').tobytes().hex())\n",
      {dir.string()}, {"numpy"}, skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  std::ostringstream want;
  for (const auto& e : debugging::read_dump_index(dir.string()))
    want << e.name << " " << e.step << " " << hex_of(debugging::load_dump_tensor(dir.string(), e)) << "\n";
  EXPECT_EQ(out, want.str());
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 12);  // 6 tensors x 2 steps
}

TEST(TensorDump, ListAndCompare) {
  const fs::path a = dump_training("cmp_a", 1.f), b = dump_training("cmp_b", 1.f), c = dump_training("cmp_c", 1.001f);
  const std::string list = debugging::list_dump(a.string());
  EXPECT_THAT(list, HasSubstr("tensor"));
  EXPECT_THAT(list, HasSubstr("NaN  Inf"));
  EXPECT_THAT(list, HasSubstr("net/dense_a/output:0 @ train epoch 0 step 0  (2, 4)  float32"));
  EXPECT_THAT(list, HasSubstr("6 tensors in " + a.string()));
  // Two equal runs match; a run with other weights differs in every tensor.
  auto same = debugging::compare_dumps(a.string(), b.string());
  EXPECT_TRUE(same.all_equal()) << same.str();
  EXPECT_THAT(same.str(), HasSubstr("all 6 tensors match"));
  auto diff = debugging::compare_dumps(a.string(), c.string());
  EXPECT_FALSE(diff.all_equal());
  EXPECT_EQ(diff.tensors[0].status, "differ");
  EXPECT_GT(diff.tensors[0].max_abs, 0);
  EXPECT_THAT(diff.str(), HasSubstr("6 of 6 tensors do not match: 6 differ, 0 missing, 0 with another shape or dtype"));
  // A loose tolerance accepts the small change in the first layer's output.
  auto loose = debugging::compare_dumps(a.string(), c.string(), {.rtol = 0.1, .atol = 0.1});
  EXPECT_TRUE(loose.tensors[0].ok()) << loose.str();
  // A dump with fewer tensors: the others are missing in B.
  const fs::path d = dump_training("cmp_d", 1.f, {.layers = {"dense_a"}});
  auto missing = debugging::compare_dumps(a.string(), d.string());
  EXPECT_EQ(missing.tensors[1].status, "missing in B");
  EXPECT_THAT(missing.str(), HasSubstr("4 of 6 tensors do not match: 0 differ, 4 missing, 0 with another shape"));
  EXPECT_EQ(debugging::compare_dumps(d.string(), a.string()).tensors.back().status, "missing in A");
}

TEST(TensorDump, ReaderErrorsNameTheFile) {
  const fs::path empty = fresh_dir("empty");
  fs::create_directories(empty);
  EXPECT_THROW(debugging::read_dump_index(empty.string()), IOError);
  std::ofstream(empty / "index.json") << "{\"format\": \"other\"}";
  try {
    debugging::read_dump_index(empty.string());
    FAIL() << "expected IOError";
  } catch (const IOError& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr((empty / "index.json").string()));
    EXPECT_THAT(std::string(e.what()), HasSubstr("expected a keras-tensor-dump index"));
  }
}

// The command-line tool, when it was built beside this test (build/apps/tensor-dump).
TEST(TensorDump, ToolListsAndComparesWithExitStatus) {
  const fs::path self = fs::read_symlink("/proc/self/exe");
  fs::path tool = self.parent_path().parent_path() / "apps" / "tensor-dump";
  if (fs::is_directory(tool)) tool /= "tensor-dump";
  if (!fs::exists(tool)) GTEST_SKIP() << "tensor-dump not built at " << tool;
  const fs::path a = dump_training("tool_a", 1.f), b = dump_training("tool_b", 1.f), c = dump_training("tool_c", 2.f);
  auto run = [&](const std::string& args) {
    const int status = std::system(("'" + tool.string() + "' " + args + " > /dev/null 2>&1").c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  EXPECT_EQ(run("list '" + a.string() + "'"), 0);
  EXPECT_EQ(run("compare '" + a.string() + "' '" + b.string() + "'"), 0);
  EXPECT_EQ(run("compare '" + a.string() + "' '" + c.string() + "'"), 1);
  EXPECT_EQ(run("compare '" + a.string() + "' '" + c.string() + "' --rtol 10 --atol 10"), 0);
  EXPECT_EQ(run("compare '" + a.string() + "' /nonexistent"), 2);
  EXPECT_EQ(run("frobnicate"), 2);
}
