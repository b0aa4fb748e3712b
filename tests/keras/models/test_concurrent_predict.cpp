// One built model serving several threads at once (a C++ inference server with a request thread
// pool): predict from each thread gives the result the same call gives alone, for a convnet
// (convolutions, batch norm, pooling, dense) and a recurrent text model (embedding with a mask,
// masked LSTM, attention). What is proven is the kernels' shared state: oneDNN's scratchpad,
// the primitive and weight caches (the chooser deciding under concurrent first calls is
// tests/backend/test_onednn_threads.cpp's).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "backend/ops.h"
#include "backend/random.h"
#include "keras/models/model.h"
#include "layers/batch_normalization.h"
#include "layers/conv2d.h"
#include "layers/dense.h"
#include "layers/embedding.h"
#include "layers/global_average_pooling2d.h"
#include "layers/global_average_pooling1d.h"
#include "layers/input_layer.h"
#include "layers/lstm.h"
#include "layers/multi_head_attention.h"
#include "layers/max_pooling2d.h"
#include "tests/support/tensor_compare.h"

using namespace keras;
namespace L = keras::layers;

namespace {

using keras::testing::relative_error;

std::shared_ptr<Model> convnet() {
  set_random_seed(5);
  auto in = L::Input({20, 20, 3});
  auto x = L::Conv2D({.filters = 16, .kernel_size = 3, .padding = "same", .activation = "relu"})(in);
  x = L::BatchNormalization()(x);
  x = L::MaxPooling2D({.pool_size = 2})(x);
  x = L::Conv2D({.filters = 32, .kernel_size = 3, .activation = "relu"})(x);
  x = L::GlobalAveragePooling2D()(x);
  return std::make_shared<Model>(in, L::Dense({.units = 5, .activation = "softmax"})(x));
}

std::shared_ptr<Model> text_model() {
  set_random_seed(6);
  auto in = L::Input({12}, {.dtype = "int32"});
  auto e = L::Embedding({.input_dim = 50, .output_dim = 16, .mask_zero = true})(in);
  auto h = L::LSTM({.units = 16, .return_sequences = true})(e);
  auto a = L::MultiHeadAttention({.num_heads = 2, .key_dim = 8})(std::vector<KerasTensor>{h, h})[0];
  return std::make_shared<Model>(in, L::Dense({.units = 3})(L::GlobalAveragePooling1D()(a)));
}

// Each of `threads` threads predicts every input `rounds` times; returns the mismatches with
// the one-thread results.
int mismatches(Model& model, const std::vector<Tensor>& inputs, int threads, int rounds) {
  std::vector<Tensor> expected;
  for (const auto& x : inputs) expected.push_back(model.predict(x));
  std::atomic<int> bad{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int r = 0; r < rounds; ++r)
        for (size_t i = 0; i < inputs.size(); ++i) {
          size_t k = (i + static_cast<size_t>(t)) % inputs.size();
          if (!(relative_error(model.predict(inputs[k]), expected[k]) < 1e-5)) ++bad;
        }
    });
  for (auto& th : pool) th.join();
  return bad;
}

}  // namespace

TEST(ConcurrentPredict, ConvnetFromFourThreads) {
  auto model = convnet();
  std::vector<Tensor> inputs;
  for (int i = 0; i < 3; ++i) inputs.push_back(random::normal({8 + i, 20, 20, 3}, 0, 1, 40 + i));
  EXPECT_EQ(mismatches(*model, inputs, 4, 3), 0);
}

TEST(ConcurrentPredict, MaskedTextModelFromFourThreads) {
  auto model = text_model();
  std::vector<Tensor> inputs;
  for (int i = 0; i < 3; ++i) {
    Tensor ids = ops::cast(random::uniform({6, 12}, 1, 50, 50 + i), DType::int32);
    std::vector<int32_t> v = ids.to_vector<int32_t>();
    for (int b = 0; b < 6; ++b)
      for (int t = 12 - b; t < 12; ++t) v[static_cast<size_t>(b * 12 + t)] = 0;  // trailing padding
    inputs.push_back(Tensor::from_vector(v, {6, 12}));
  }
  EXPECT_EQ(mismatches(*model, inputs, 4, 3), 0);
}
