// oneDNN kernels called from several threads at once (a server running one model per request
// thread) give the results of the same calls made one at a time: convolutions with every kernel
// candidate of conv_choice.h and while the chooser is still deciding, and the other oneDNN
// primitives (matmul, eltwise, softmax, average pooling). Regression: oneDNN's library-managed
// scratchpad was shared between concurrent executions: wrong results, and crashes in Winograd.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "backend/cpu/conv_choice.h"
#include "backend/ops.h"
#include "backend/ops_conv.h"
#include "backend/ops_nn.h"
#include "backend/random.h"
#include "tests/support/tensor_compare.h"

using namespace keras;
using cpu::ConvCandidate;

namespace {

using keras::testing::relative_error;

struct Problem {
  Shape x, k;
};

// Several shapes, so that concurrent calls run different primitives as well as the same one.
std::vector<Problem> problems() {
  return {{{4, 16, 16, 16}, {3, 3, 16, 32}}, {{2, 12, 12, 32}, {3, 3, 32, 32}}, {{3, 9, 9, 8}, {1, 1, 8, 24}}};
}

ConvParams same_padding(const Problem& pr) {
  ConvParams p;
  std::tie(p.pad_top, p.pad_bottom) = ops::conv_pads(pr.x[1], pr.k[0], "same", 1, 1);
  std::tie(p.pad_left, p.pad_right) = ops::conv_pads(pr.x[2], pr.k[1], "same", 1, 1);
  return p;
}

struct Work {
  Problem pr;
  Tensor x, k, b, dy;
  TensorList expected;  // y, dx, dk, db computed alone
};

TensorList run(const Work& w) {
  ConvParams p = same_padding(w.pr);
  TensorList g = ops::conv2d_backward_weights(w.x, w.dy, w.pr.k, p, true);
  return {ops::conv2d_explicit(w.x, w.k, w.b, p, "relu"), ops::conv2d_backward_data(w.dy, w.k, w.pr.x, p), g[0], g[1]};
}

std::vector<Work> make_work(int copies) {
  std::vector<Work> work;
  uint64_t seed = 50;
  for (int c = 0; c < copies; ++c)
    for (const auto& pr : problems()) {
      Work w{pr, random::normal(pr.x, 0, 1, seed), random::normal(pr.k, 0, 1, seed + 1),
             random::normal({pr.k[3]}, 0, 1, seed + 2), Tensor(), {}};
      w.dy = random::normal(Shape{pr.x[0], pr.x[1], pr.x[2], pr.k[3]}, 0, 1, seed + 3);
      seed += 10;
      work.push_back(std::move(w));
    }
  return work;
}

// Runs every work item `rounds` times from each of `threads` threads; returns the mismatches.
int concurrent_mismatches(const std::vector<Work>& work, int threads, int rounds) {
  std::atomic<int> bad{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int r = 0; r < rounds; ++r)
        for (size_t i = 0; i < work.size(); ++i) {
          const Work& w = work[(i + t) % work.size()];  // threads start on different problems
          TensorList got = run(w);
          for (size_t o = 0; o < got.size(); ++o)
            if (!(relative_error(got[o], w.expected[o]) < 1e-4)) ++bad;
        }
    });
  for (auto& th : pool) th.join();
  return bad;
}

class ConvThreads : public ::testing::TestWithParam<int> {
 protected:
  void TearDown() override {
    cpu::force_conv_candidate(std::nullopt);
    cpu::reset_conv_choices();
  }
};

}  // namespace

// Param: -1 = the chooser (first calls concurrent, so it decides while others run), else a
// forced candidate.
TEST_P(ConvThreads, ConcurrentCallsMatchSequentialOnes) {
  int param = GetParam();
  cpu::reset_conv_choices();
  std::vector<Work> work = make_work(2);
  if (param >= 0) cpu::force_conv_candidate(static_cast<ConvCandidate>(param));
  for (auto& w : work) w.expected = run(w);
  if (param < 0) cpu::reset_conv_choices();  // the threads below make every first call
  EXPECT_EQ(concurrent_mismatches(work, 4, 4), 0);
}

INSTANTIATE_TEST_SUITE_P(Candidates, ConvThreads,
                         ::testing::Values(-1, static_cast<int>(ConvCandidate::direct),
                                           static_cast<int>(ConvCandidate::onednn_direct),
                                           static_cast<int>(ConvCandidate::onednn_winograd)),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return info.param < 0 ? std::string("chooser")
                                                 : std::string(cpu::conv_candidate_name(static_cast<ConvCandidate>(info.param)));
                         });

TEST(OneDnnThreads, OtherPrimitivesConcurrentCallsMatchSequentialOnes) {
  Tensor x = random::normal({64, 96}, 0, 1, 7), k = random::normal({96, 80}, 0, 1, 8), b = random::normal({80}, 0, 1, 9);
  Tensor img = random::normal({4, 12, 12, 16}, 0, 1, 10);
  auto run_all = [&] {
    Tensor h = ops::dense(x, k, b, "relu");
    return TensorList{h, ops::softmax(ops::matmul(h, h, false, true)), ops::gelu(h),
                      ops::avg_pool2d(img, {3, 3}, {1, 1}, "same")};
  };
  TensorList expected = run_all();
  std::atomic<int> bad{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < 4; ++t)
    pool.emplace_back([&] {
      for (int r = 0; r < 20; ++r) {
        TensorList got = run_all();
        for (size_t o = 0; o < got.size(); ++o)
          if (!(relative_error(got[o], expected[o]) < 1e-5)) ++bad;
      }
    });
  for (auto& th : pool) th.join();
  EXPECT_EQ(bad.load(), 0);
}
