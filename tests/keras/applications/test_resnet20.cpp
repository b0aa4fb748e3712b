// ResNet-20 (keras::applications): structure, parameter counts, a training step.
#include <gtest/gtest.h>

#include "keras/keras.h"
#include "keras/applications/resnet20.h"

using namespace keras;

TEST(ResNet20, MatchesTheReferenceNetwork) {
  auto model = applications::ResNet20({.classifier_activation = "linear"});
  // The PyTorch reference (shared/bench/torch_models.resnet20) has 272,474 parameters and 1,568
  // running-statistics entries; BatchNormalization's moving mean/variance are ours.
  int64_t trainable = 0, frozen = 0;
  for (const auto& v : model->trainable_weights()) trainable += shape_numel(v.shape());
  for (const auto& v : model->non_trainable_weights()) frozen += shape_numel(v.shape());
  EXPECT_EQ(trainable, 272474);
  EXPECT_EQ(frozen, 1568);
  EXPECT_EQ(model->outputs()[0].shape, (Shape{-1, 10}));
}

TEST(ResNet20, TrainsAndUpdatesMovingStatistics) {
  set_random_seed(3);
  auto model = applications::ResNet20({.input_shape = {8, 8, 3}, .classifier_activation = "linear"});
  model->compile({.optimizer = optimizers::SGD({.learning_rate = 0.05, .momentum = 0.9}),
                  .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  Tensor x = random::normal({8, 8, 8, 3}, 0, 1, uint64_t{4});
  Tensor y = Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7});
  Tensor moving_before = model->non_trainable_weights()[0].value().clone();
  double first = model->train_on_batch(x, y).at("loss");
  double last = first;
  for (int i = 0; i < 15; ++i) last = model->train_on_batch(x, y).at("loss");
  EXPECT_LT(last, 0.5 * first);
  EXPECT_NE(moving_before.to_vector<float>(), model->non_trainable_weights()[0].value().to_vector<float>());
}
