// Ownership of the functional graph: a model, its layers and its Input() are freed when the last
// user handle goes (issue: clean under LeakSanitizer). Checked through weak_ptrs, so a leak is a
// failed expectation here and not only a sanitizer report.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "backend/allocator.h"
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

// A layer called on a tensor it produced itself (a shared layer at two depths) used to own its
// own node: Layer -> node -> KerasTensor -> Layer.
TEST(Ownership, ALayerSharedAtTwoDepthsIsFreed) {
  std::vector<std::weak_ptr<Layer>> watched;
  {
    auto inputs = L::Input({4});
    auto shared = L::Dense({.units = 4, .activation = "tanh"});
    auto x = shared(inputs);
    x = L::Dense({.units = 4})(x);
    auto model = std::make_shared<Model>(inputs, shared(x));  // `shared` again, downstream of itself
    model->predict(random::normal({2, 4}, 0, 1, uint64_t{4}));
    watched = watch(model);
    ASSERT_EQ(watched.size(), 4u);
  }
  expect_all_freed(watched);
}

TEST(Ownership, ANestedModelCalledOnItsOwnOutputIsFreed) {
  std::vector<std::weak_ptr<Layer>> watched;
  {
    auto inner_in = L::Input({3});
    auto inner = std::make_shared<Model>(inner_in, L::Dense({.units = 3})(inner_in), "inner");
    auto x = L::Input({3});
    auto outer = std::make_shared<Model>(x, (*inner)((*inner)(x)), "outer");
    outer->predict(random::normal({2, 3}, 0, 1, uint64_t{5}));
    watched = watch(outer);
    for (const auto& l : inner->layers()) watched.push_back(l);
  }
  expect_all_freed(watched);
}

TEST(Ownership, AModelWithSharedLayersRebuiltFromItsConfigIsFreed) {
  std::vector<std::weak_ptr<Layer>> watched;
  {
    auto inputs = L::Input({4});
    auto shared = L::Dense({.units = 4, .name = "shared"});
    auto model = std::make_shared<Model>(inputs, shared(shared(inputs)));
    auto rebuilt = model_from_json(model->to_json());
    ASSERT_EQ(rebuilt->get_layer("shared")->inbound_nodes().size(), 2u);
    watched = watch(rebuilt);
  }
  expect_all_freed(watched);
}

// A layer observes its calls but does not keep them: a call nobody holds any more reads as null,
// and the indices of the others stay put.
TEST(Ownership, ALayerDoesNotKeepItsCallsAlive) {
  auto inputs = L::Input({2});
  auto dense = L::Dense({.units = 2});
  { auto dropped = dense(inputs); }
  auto kept = dense(inputs);
  auto nodes = dense->inbound_nodes();
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0], nullptr);
  EXPECT_EQ(nodes[1], kept.node);
  EXPECT_EQ(kept.node_index, 1);
}

// What a hyper-parameter search or a model server does: build, train, save, load and drop models
// over and over. Every byte of tensor memory must come back each time.
TEST(Ownership, BuildingModelsInALoopReturnsAllTensorMemory) {
  const auto cycle = [](int i) {
    auto inputs = L::Input({6});
    auto shared = L::Dense({.units = 6, .activation = "relu", .name = "shared"});
    auto inner_in = L::Input({6});
    auto inner = std::make_shared<Model>(inner_in, L::Dense({.units = 6})(inner_in), "inner");
    auto x = shared((*inner)(shared(inputs)));
    auto model = std::make_shared<Model>(inputs, L::Dense({.units = 1})((*inner)(x)), "search");
    model->compile({.optimizer = "adam", .loss = "mse"});
    auto xs = random::normal({8, 6}, 0, 1, uint64_t(10 + i));
    model->fit(xs, random::normal({8, 1}, 0, 1, uint64_t(20 + i)), {.batch_size = 4, .epochs = 1, .verbose = 0});
    auto rebuilt = model_from_json(model->to_json());
    rebuilt->set_weights(model->get_weights());
    rebuilt->predict(xs);
  };
  Allocator& cpu = allocator_for(DeviceKind::cpu);
  cycle(0);  // first use fills process-wide caches (random streams, kernel scratch)
  const size_t baseline = cpu.bytes_in_use();
  for (int i = 1; i <= 30; ++i) {
    cycle(i);
    ASSERT_EQ(cpu.bytes_in_use(), baseline) << "after model " << i;
  }
}
