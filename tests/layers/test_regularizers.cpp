#include <gtest/gtest.h>

#include "backend/autodiff.h"
#include "backend/ops.h"
#include "layers/dense.h"
#include "layers/regularizers.h"
#include "support/gradcheck.h"

using namespace keras;
namespace reg = keras::regularizers;

namespace {
Tensor w3() { return Tensor::from_vector(std::vector<float>{1, -2, 3}); }
}  // namespace

TEST(Regularizers, Values) {
  EXPECT_NEAR(reg::L1(0.1)(w3()).item(), 0.6, 1e-6);
  EXPECT_NEAR(reg::L2(0.1)(w3()).item(), 1.4, 1e-6);
  EXPECT_NEAR(reg::L1L2(0.1, 0.2)(w3()).item(), 0.6 + 2.8, 1e-6);
  EXPECT_NEAR(reg::L1()(w3()).item(), 0.06, 1e-7);  // Keras default 0.01
  EXPECT_NEAR(reg::L2()(w3()).item(), 0.14, 1e-7);
  Tensor zero = reg::L1L2()(w3());
  EXPECT_EQ(zero.rank(), 0);
  EXPECT_EQ(zero.item(), 0.0);
  EXPECT_EQ(reg::L2(0.5)(Tensor::ones({2, 3})).rank(), 0);
  EXPECT_THROW(reg::L1(-1.0), ValueError);
  EXPECT_THROW(reg::L2(std::nan("")), ValueError);
}

TEST(Regularizers, GradientsOnTheTape) {
  Tensor w = w3();
  w.set_requires_grad(true);
  TensorList g;
  {
    GradientTape tape;
    g = tape.gradient(reg::L1L2(0.1, 0.2)(w), {w});
  }
  ASSERT_TRUE(g[0].defined());
  // d/dw = 0.1 sign(w) + 0.4 w
  std::vector<float> expected{0.1f + 0.4f, -0.1f - 0.8f, 0.1f + 1.2f};
  auto got = g[0].to_vector<float>();
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(got[i], expected[i], 1e-6);

  Tensor w64 = Tensor::from_vector(std::vector<double>{0.5, -1.5, 2.0, -0.25}, {2, 2});
  keras::testing::check_gradients("L1L2", [](const TensorList& in) { return reg::L1L2(0.3, 0.7)(in[0]); }, {w64});
  keras::testing::check_gradients("L2 f32", [](const TensorList& in) { return reg::L2(0.3)(in[0]); },
                                  {random::normal({3, 4}, 0, 1, uint64_t{2})});
}

TEST(Regularizers, ConfigAndLookup) {
  EXPECT_EQ(reg::get("l1")->class_name(), "L1");
  EXPECT_EQ(reg::get("L2")->class_name(), "L2");
  EXPECT_EQ(reg::get("l1_l2")->class_name(), "L1L2");
  EXPECT_EQ(reg::L1(0.5).get_config(), json({{"l1", 0.5}}));
  EXPECT_EQ(reg::L2().get_config(), json({{"l2", 0.01}}));
  EXPECT_EQ(reg::L1L2(0.1, 0.2).get_config(), json({{"l1", 0.1}, {"l2", 0.2}}));
  for (RegularizerPtr r : {RegularizerPtr(std::make_shared<reg::L1>(0.3)), RegularizerPtr(std::make_shared<reg::L2>(0.4)),
                           RegularizerPtr(std::make_shared<reg::L1L2>(0.1, 0.2))}) {
    json j = reg::serialize(r);
    EXPECT_EQ(j["module"], "keras.regularizers");
    EXPECT_TRUE(j["registered_name"].is_null());
    auto back = reg::from_config(json::parse(j.dump()));
    EXPECT_EQ(back->class_name(), r->class_name());
    EXPECT_EQ(back->get_config(), r->get_config());
    EXPECT_EQ(reg::from_config({{"class_name", r->class_name()}, {"config", r->get_config()}})->get_config(),
              r->get_config());
  }
  EXPECT_EQ(reg::from_config(nullptr), nullptr);
  EXPECT_EQ(reg::serialize(nullptr), json(nullptr));
  try {
    reg::get("l3");
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("l1_l2"), std::string::npos) << e.what();
  }
}

TEST(Regularizers, DenseCollectsPenalties) {
  layers::Dense dense({.units = 3, .kernel_initializer = "ones", .kernel_regularizer = "l2",
                       .bias_regularizer = std::make_shared<reg::L1>(0.5)});
  dense(Tensor::ones({2, 4}));
  TensorList losses = dense->regularization_losses();
  ASSERT_EQ(losses.size(), 2u);
  EXPECT_NEAR(losses[0].item(), 0.01 * 12, 1e-6);
  EXPECT_NEAR(losses[1].item(), 0.0, 1e-7);  // zero bias
  json c = dense->get_config();
  EXPECT_EQ(c["kernel_regularizer"]["class_name"], "L2");
  EXPECT_EQ(c["bias_regularizer"]["config"]["l1"], 0.5);
  // A frozen layer contributes no penalty (its weights are not trained).
  dense->set_trainable(false);
  EXPECT_TRUE(dense->regularization_losses().empty());
}
