// Ownership of the functional graph: a model, its layers and its Input() are freed when the last
// user handle goes (issue: clean under LeakSanitizer). Checked through weak_ptrs, so a leak is a
// failed expectation here and not only a sanitizer report.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "keras/keras.h"

using namespace keras;
namespace L = keras::layers;

namespace {
// Weak handles on every layer of `model`, the model itself included.
std::vector<std::weak_ptr<Layer>> watch(const std::shared_ptr<Model>& model) {
  std::vector<std::weak_ptr<Layer>> out{model};
  for (const auto& l : model->layers()) out.push_back(l);
  return out;
}

void expect_all_freed(const std::vector<std::weak_ptr<Layer>>& watched) {
  for (size_t i = 0; i < watched.size(); ++i) EXPECT_TRUE(watched[i].expired()) << "layer " << i << " still alive";
}
}  // namespace

TEST(Ownership, AFunctionalModelAndItsInputAreFreed) {
  std::vector<std::weak_ptr<Layer>> watched;
  {
    auto inputs = L::Input({4});
    auto x = L::Dense({.units = 8, .activation = "relu"})(inputs);
    auto model = std::make_shared<Model>(inputs, L::Dense({.units = 2})(x));
    model->predict(random::normal({3, 4}, 0, 1, uint64_t{1}));
    watched = watch(model);
    ASSERT_EQ(watched.size(), 4u);  // the model, its InputLayer and two Dense
  }
  expect_all_freed(watched);
}

TEST(Ownership, AnInputAloneIsFreed) {
  std::weak_ptr<Layer> input_layer;
  {
    auto inputs = L::Input({4});
    input_layer = inputs.layer;
    auto again = std::dynamic_pointer_cast<L::InputLayerImpl>(inputs.layer)->output();  // a second request
    EXPECT_EQ(again.node_index, inputs.node_index);
  }
  EXPECT_TRUE(input_layer.expired());
}

TEST(Ownership, SequentialCompiledAndTrainedIsFreed) {
  std::vector<std::weak_ptr<Layer>> watched;
  {
    auto model = std::make_shared<Sequential>(std::initializer_list<SequentialEntry>{
        L::Input({4}), L::Dense({.units = 8, .activation = "relu"}), L::Dense({.units = 1})});
    model->compile({.optimizer = "adam", .loss = "mse"});
    model->fit(random::normal({16, 4}, 0, 1, uint64_t{2}), random::normal({16, 1}, 0, 1, uint64_t{3}),
               {.batch_size = 8, .epochs = 1, .verbose = 0});
    watched = watch(model);
  }
  expect_all_freed(watched);
}

TEST(Ownership, ANestedModelIsFreedWithItsOuterModel) {
  std::vector<std::weak_ptr<Layer>> watched;
  {
    auto inner_in = L::Input({3});
    auto inner = std::make_shared<Model>(inner_in, L::Dense({.units = 3})(inner_in), "inner");
    auto x = L::Input({3});
    auto outer = std::make_shared<Model>(x, L::Dense({.units = 1})((*inner)(x)), "outer");
    watched = watch(outer);
    for (const auto& l : inner->layers()) watched.push_back(l);
  }
  expect_all_freed(watched);
}

TEST(Ownership, AModelRebuiltFromItsConfigIsFreed) {
  std::vector<std::weak_ptr<Layer>> watched;
  {
    auto inputs = L::Input({4});
    auto model = std::make_shared<Model>(inputs, L::Dense({.units = 2})(inputs));
    auto rebuilt = model_from_json(model->to_json());
    watched = watch(rebuilt);
  }
  expect_all_freed(watched);
}
