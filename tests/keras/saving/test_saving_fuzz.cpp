// Brief fuzzing of every reader behind load_model / load_weights / model_from_json: mutations of
// real Keras files (tests/data/keras) must be read or rejected with a keras::Error, never crash
// or escape as another exception (tests/support/fuzz.h). Seeds are fixed, so a failure
// reproduces; raise the iteration counts locally for a longer run.
#include <gtest/gtest.h>

#include <filesystem>

#include "keras/utils/zip.h"
#include "keras/utils/file_util.h"
#include "keras/keras.h"
#include "keras/data/readers.h"
#include "keras/saving/saving.h"
#include "support/fuzz.h"

namespace fs = std::filesystem;
using keras::testing::run_fuzz;

namespace {

const std::string kFixtures = std::string(KERAS_SOURCE_DIR) + "/tests/data/keras/";

int iterations(int n) {
  const char* env = std::getenv("KERAS_FUZZ_ITERATIONS");
  return env ? std::atoi(env) : n;
}

std::string scratch(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("keras_fuzz_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return (dir / name).string();
}

// Writes the bytes to a file with the right suffix and runs `load` on it.
keras::testing::FuzzTarget through_file(const std::string& name, std::function<void(const std::string&)> load) {
  const std::string path = scratch(name);
  return [path, load](const std::string& bytes) {
    keras::write_file_atomic(path, bytes);
    load(path);
  };
}

TEST(SavingFuzz, KerasArchive) {
  auto stats = run_fuzz({keras::read_file_bytes(kFixtures + "mlp.keras"), keras::read_file_bytes(kFixtures + "two_inputs.keras")},
                        iterations(300), 1, through_file("m.keras", [](const std::string& p) { keras::load_model(p); }));
  EXPECT_GT(stats.rejected, 0);
}

TEST(SavingFuzz, ZipReader) {
  const std::string seed = keras::read_file_bytes(kFixtures + "mlp.keras");
  run_fuzz({seed}, iterations(2000), 2, [](const std::string& b) { keras::zip::read_archive_bytes(b, "fuzz.zip"); });
}

TEST(SavingFuzz, ModelConfigJson) {
  auto stats = run_fuzz({keras::read_file_bytes(kFixtures + "two_inputs.k3.json"), keras::read_file_bytes(kFixtures + "nested.k2.json")},
                        iterations(1500), 3, [](const std::string& b) { keras::model_from_json(b); });
  EXPECT_GT(stats.rejected, 0);
}

// Structural mutations of a config that still parses: values of the wrong type or kind at
// random places must give keras errors too (not nlohmann's type errors).
TEST(SavingFuzz, ModelConfigValues) {
  const auto base = nlohmann::json::parse(keras::read_file_bytes(kFixtures + "cnn.k3.json"));
  std::vector<nlohmann::json*> slots;
  keras::testing::FuzzRng rng(4);
  const nlohmann::json replacements[] = {nullptr, 1, -1, 2.5, "x", true, nlohmann::json::array(), nlohmann::json::object(),
                                         nlohmann::json::array({1, 2}), 1e300};
  int rejected = 0;
  for (int i = 0; i < iterations(1500); ++i) {
    nlohmann::json copy = base;
    std::vector<nlohmann::json*> nodes;
    std::vector<nlohmann::json*> stack{&copy};
    while (!stack.empty()) {
      auto* n = stack.back();
      stack.pop_back();
      nodes.push_back(n);
      if (n->is_structured())
        for (auto& child : *n) stack.push_back(&child);
    }
    *nodes[rng.below(nodes.size())] = replacements[rng.below(std::size(replacements))];
    try {
      keras::model_from_config(copy);
    } catch (const keras::Error&) {
      ++rejected;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "iteration " << i << ": untyped exception " << e.what();
    }
  }
  EXPECT_GT(rejected, 0);
}

TEST(SavingFuzz, LegacyH5) {
  run_fuzz({keras::read_file_bytes(kFixtures + "mlp.k2.h5")}, iterations(300), 5,
           through_file("m.h5", [](const std::string& p) { keras::load_model(p); }));
}

TEST(SavingFuzz, WeightsFile) {
  auto model = keras::load_model(kFixtures + "mlp.keras", {.compile = false});
  run_fuzz({keras::read_file_bytes(kFixtures + "mlp.weights.h5")}, iterations(300), 6,
           through_file("w.weights.h5", [&](const std::string& p) { model->load_weights(p); }));
}

TEST(SavingFuzz, Npy) {
  const std::string seed = keras::read_file_bytes(kFixtures + "cnn.input0.npy");
  run_fuzz({seed}, iterations(2000), 7, [](const std::string& b) { keras::data::parse_npy(b, "fuzz.npy"); });
}

}  // namespace
