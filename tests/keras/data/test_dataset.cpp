// Dataset pipeline: every stage against a direct computation, and seeded determinism. Which
// threads the stages run on, and that none outlives its iterator: test_dataset_threads.cpp.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "backend/ops.h"
#include "keras/data/dataset.h"
#include "support/dataset_values.h"

using namespace keras;
using keras::testing::collect;
using keras::testing::scalars;
using keras::data::Dataset;
using keras::data::Element;

namespace {

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

}  // namespace

TEST(Dataset, FromTensorSlicesYieldsRows) {
  Tensor x = Tensor::arange(0, 12).view({4, 3});
  Tensor y = Tensor::from_vector<int64_t>({7, 8, 9, 10});
  Dataset ds = Dataset::from_tensor_slices({x, y});
  EXPECT_EQ(ds.cardinality(), 4);
  int64_t i = 0;
  for (const Element& e : ds.iterator()) {
    ASSERT_EQ(e.size(), 2u);
    EXPECT_EQ(e[0].shape(), (Shape{3}));
    EXPECT_EQ(e[1].shape(), Shape{});
    for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(element_as_double(e[0], j), 3 * i + j);
    EXPECT_EQ(e[1].item(), 7 + i);
    ++i;
  }
  EXPECT_EQ(i, 4);
  EXPECT_THROW(Dataset::from_tensor_slices({x, Tensor::zeros({3})}), ValueError);
  EXPECT_THROW(Dataset::from_tensor_slices({Tensor::scalar(1)}), ValueError);
}

TEST(Dataset, FromTensorsAndRange) {
  Dataset one = Dataset::from_tensors({Tensor::ones({2, 2})});
  EXPECT_EQ(one.cardinality(), 1);
  auto v = collect(one);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].size(), 4u);
  EXPECT_EQ(scalars(Dataset::range(2, 11, 3)), (std::vector<int64_t>{2, 5, 8}));
  EXPECT_EQ(scalars(Dataset::range(5, 0, -2)), (std::vector<int64_t>{5, 3, 1}));
  EXPECT_EQ(Dataset::range(2, 11, 3).cardinality(), 3);
  EXPECT_THROW(Dataset::range(0, 4, 0), ValueError);
}

TEST(Dataset, BatchStacksConsecutiveElements) {
  Tensor x = Tensor::arange(0, 14).view({7, 2});
  Dataset ds = Dataset::from_tensor_slices({x, Tensor::arange(0, 7, 1, DType::int64)});
  auto b = ds.batch(3);
  EXPECT_EQ(b.cardinality(), 3);
  std::vector<int64_t> sizes;
  int64_t row = 0;
  for (const Element& e : b.iterator()) {
    sizes.push_back(e[0].dim(0));
    EXPECT_EQ(e[0].shape(), (Shape{e[0].dim(0), 2}));
    EXPECT_EQ(e[1].dtype(), DType::int64);
    for (int64_t r = 0; r < e[0].dim(0); ++r, ++row) {
      EXPECT_EQ(element_as_double(e[0], 2 * r), 2 * row);
      EXPECT_EQ(element_as_double(e[0], 2 * r + 1), 2 * row + 1);
      EXPECT_EQ(element_as_double(e[1], r), row);
    }
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{3, 3, 1}));
  auto dropped = ds.batch(3, /*drop_remainder=*/true);
  EXPECT_EQ(dropped.cardinality(), 2);
  EXPECT_EQ(collect(dropped).size(), 2u);
  EXPECT_THROW(ds.batch(0), ValueError);
}

TEST(Dataset, BatchOfMismatchedShapesNamesElementAndShapes) {
  // The message of the ShapeError the iterator's next batch raises ("" and a failure if none).
  auto shape_error = [](data::Iterator& it) -> std::string {
    try {
      it.next();
    } catch (const ShapeError& err) {
      return err.what();
    }
    ADD_FAILURE() << "no ShapeError";
    return "";
  };
  // Element i has shape (1 + i / 2): the first batch of 3 mixes (1,) and (2,).
  auto ds = Dataset::range(6)
                .map([](const Element& e) { return Element{Tensor::ones({1 + static_cast<int64_t>(e[0].item()) / 2})}; })
                .batch(3);
  auto it = ds.iterator();
  std::string msg = shape_error(it);
  EXPECT_NE(msg.find("element 2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(1,)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(2,)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Dataset.batch"), std::string::npos) << msg;
  EXPECT_FALSE(it.next().has_value());  // the failed iterator is finished

  // In a later batch the elements are numbered as in the dataset: 3 and 4 of batch 3..5.
  auto later = Dataset::range(6)
                   .map([](const Element& e) { return Element{Tensor::ones({e[0].item() == 4 ? 2 : 1})}; })
                   .batch(3)
                   .iterator();
  ASSERT_TRUE(later.next().has_value());
  msg = shape_error(later);
  EXPECT_NE(msg.find("batch of elements 3..5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected element 4 to have the shape of element 3, (1,), got (2,)"), std::string::npos) << msg;
}

TEST(Dataset, ShuffleIsASeededPermutation) {
  const int64_t n = 50;
  auto base = Dataset::range(n);
  auto a = scalars(base.shuffle(n, 7));
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, iota(n));
  EXPECT_NE(a, iota(n));
  EXPECT_EQ(scalars(base.shuffle(n, 7)), a);  // same seed, same first epoch
  EXPECT_NE(scalars(base.shuffle(n, 8)), a);  // another seed, another order
  EXPECT_EQ(scalars(base.shuffle(1, 7)), iota(n));  // a buffer of one cannot reorder
}

TEST(Dataset, ShuffleEpochsWithAndWithoutReshuffle) {
  auto base = Dataset::range(40);
  auto fixed = base.shuffle(40, 3, /*reshuffle_each_iteration=*/false);
  auto e1 = scalars(fixed), e2 = scalars(fixed);
  EXPECT_EQ(e1, e2);
  auto re = base.shuffle(40, 3);
  auto r1 = scalars(re), r2 = scalars(re);
  EXPECT_EQ(r1, e1);  // epoch 0 of a reshuffling dataset is the fixed order
  EXPECT_NE(r1, r2);
  auto again = base.shuffle(40, 3);  // a new dataset with the seed replays the epoch sequence
  EXPECT_EQ(scalars(again), r1);
  EXPECT_EQ(scalars(again), r2);
  // Over repeat, each repetition is a new epoch of the shuffle.
  auto rep = scalars(base.shuffle(40, 3).repeat(2));
  auto again2 = base.shuffle(40, 3);
  auto first = scalars(again2), second = scalars(again2);
  first.insert(first.end(), second.begin(), second.end());
  EXPECT_EQ(rep, first);
}

TEST(Dataset, ShuffleWithSmallBufferOnlyDrawsFromTheWindow) {
  const int64_t n = 100, buf = 5;
  auto out = scalars(Dataset::range(n).shuffle(buf, 11));
  auto sorted = out;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, iota(n));
  // Output k is drawn from a buffer filled with inputs up to index k + buf - 1.
  for (int64_t k = 0; k < n; ++k) EXPECT_LT(out[static_cast<size_t>(k)], k + buf);
}

TEST(Dataset, ShuffleWithoutSeedFollowsTheGlobalSeed) {
  set_random_seed(123);
  auto a = scalars(Dataset::range(30).shuffle(30));
  set_random_seed(123);
  auto b = scalars(Dataset::range(30).shuffle(30));
  EXPECT_EQ(a, b);
}

TEST(Dataset, RepeatTakeSkip) {
  auto r = Dataset::range(3);
  EXPECT_EQ(scalars(r.repeat(2)), (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(r.repeat(2).cardinality(), 6);
  EXPECT_EQ(r.repeat().cardinality(), data::INFINITE_CARDINALITY);
  EXPECT_EQ(scalars(r.repeat().take(7)), (std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0}));
  EXPECT_EQ(r.repeat().take(7).cardinality(), 7);
  EXPECT_TRUE(scalars(r.repeat(0)).empty());
  EXPECT_TRUE(scalars(Dataset::range(0).repeat()).empty());  // an empty pass ends a repeat
  auto t = Dataset::range(10);
  EXPECT_EQ(scalars(t.take(4)), iota(4));
  EXPECT_EQ(scalars(t.take(-1)), iota(10));
  EXPECT_EQ(scalars(t.take(20)).size(), 10u);
  EXPECT_EQ(scalars(t.skip(7)), (std::vector<int64_t>{7, 8, 9}));
  EXPECT_TRUE(scalars(t.skip(-1)).empty());
  EXPECT_TRUE(scalars(t.skip(12)).empty());
  EXPECT_EQ(t.skip(7).cardinality(), 3);
  EXPECT_EQ(t.take(4).cardinality(), 4);
  EXPECT_EQ(scalars(t.skip(2).take(3)), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(t.shuffle(4, 1).batch(3).repeat(2).describe(), "Range -> Shuffle -> Batch -> Repeat");
}

TEST(Dataset, MapMatchesDirectComputationSequentialAndParallel) {
  Tensor x = Tensor::arange(0, 64).view({32, 2});
  auto fn = [](const Element& e) {
    // Uneven work so that parallel workers finish out of order.
    if (static_cast<int64_t>(element_as_double(e[0], 0)) % 6 == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return Element{ops::add(ops::multiply(e[0], 2.0), 1.0)};
  };
  auto src = Dataset::from_tensor_slices({x});
  for (int64_t calls : {int64_t{1}, int64_t{4}, data::AUTOTUNE}) {
    auto rows = collect(src.map(fn, calls));
    ASSERT_EQ(rows.size(), 32u) << calls;
    for (size_t i = 0; i < rows.size(); ++i) {
      EXPECT_EQ(rows[i][0], 2.0 * (2 * i) + 1) << calls;
      EXPECT_EQ(rows[i][1], 2.0 * (2 * i + 1) + 1) << calls;
    }
  }
  EXPECT_THROW(src.map(fn, 0), ValueError);
}

TEST(Dataset, MapRunsWithoutGradientRecording) {
  Tensor w = Tensor::ones({2}).set_requires_grad(true);
  auto ds = Dataset::from_tensor_slices({Tensor::ones({3, 2})}).map([w](const Element& e) {
    return Element{ops::multiply(e[0], w)};
  });
  for (const Element& e : ds.iterator()) EXPECT_FALSE(e[0].requires_grad());
}

TEST(Dataset, PrefetchYieldsTheSameElements) {
  auto base = Dataset::range(25).shuffle(25, 5, false).batch(4);
  EXPECT_EQ(collect(base.prefetch(3)), collect(base));
  EXPECT_EQ(collect(base.prefetch()), collect(base));
  EXPECT_EQ(base.prefetch(2).cardinality(), base.cardinality());
  EXPECT_THROW(base.prefetch(0), ValueError);
}

TEST(Dataset, CacheReplaysTheFirstCompletePass) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto ds = Dataset::range(6)
                .map([calls](const Element& e) {
                  ++*calls;
                  return Element{ops::multiply(e[0], 3.0)};
                })
                .cache();
  // A partial pass caches nothing.
  {
    auto it = ds.iterator();
    it.next();
    it.next();
  }
  EXPECT_EQ(calls->load(), 2);
  auto first = scalars(ds);
  EXPECT_EQ(first, (std::vector<int64_t>{0, 3, 6, 9, 12, 15}));
  EXPECT_EQ(calls->load(), 8);
  EXPECT_EQ(scalars(ds), first);
  EXPECT_EQ(scalars(ds.take(2)), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(calls->load(), 8);  // replays never call the map function again
}

TEST(Dataset, EpochIteratorFullPassesAndStepsPerEpoch) {
  auto ds = Dataset::from_tensor_slices({Tensor::arange(0, 10), Tensor::arange(0, 10)}).batch(4);
  data::EpochIterator full(ds);
  EXPECT_EQ(full.steps(), 3);
  for (int epoch = 0; epoch < 2; ++epoch) {
    full.begin_epoch();
    int n = 0;
    while (auto b = full.next()) {
      auto xyw = data::unpack_batch(*b, "fit");
      EXPECT_TRUE(xyw.y.defined());
      EXPECT_FALSE(xyw.sample_weight.defined());
      ++n;
    }
    EXPECT_EQ(n, 3);
  }
  // Two steps per epoch over 3 batches: epoch 0 = b0 b1, epoch 1 = b2 then a new pass b0.
  data::EpochIterator stepped(ds, 2);
  std::vector<double> firsts;
  for (int epoch = 0; epoch < 2; ++epoch) {
    stepped.begin_epoch();
    while (auto b = stepped.next()) firsts.push_back(element_as_double((*b)[0], 0));
  }
  EXPECT_EQ(firsts, (std::vector<double>{0, 4, 8, 0}));
  EXPECT_FALSE(stepped.ran_out());
  // An infinite dataset needs steps_per_epoch.
  EXPECT_THROW(data::EpochIterator(ds.repeat()), ValueError);
  data::EpochIterator inf(ds.repeat(), 5);
  inf.begin_epoch();
  int n = 0;
  while (inf.next()) ++n;
  EXPECT_EQ(n, 5);
  EXPECT_THROW(data::unpack_batch({}, "fit"), ValueError);
}

TEST(Dataset, StackChecksShapesAndDtypes) {
  Tensor s = data::stack({Tensor::ones({2}), Tensor::zeros({2})}, "t");
  EXPECT_EQ(s.shape(), (Shape{2, 2}));
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{1, 1, 0, 0}));
  EXPECT_THROW(data::stack({Tensor::ones({2}), Tensor::ones({2}, DType::int64)}, "t"), TypeError);
  EXPECT_THROW(data::stack({}, "t"), ValueError);
}

TEST(Dataset, GatherFastPathMatchesGenericPath) {
  // from_tensor_slices (+ shuffle) + batch gathers rows straight into batches; an identity map in
  // between forces the element-by-element path. Both must give the same batches.
  Tensor x = Tensor::arange(0, 46).view({23, 2});
  Tensor y = Tensor::arange(0, 23, 1, DType::int64);
  auto src = Dataset::from_tensor_slices({x, y});
  auto slow = src.map([](const Element& e) { return e; });
  for (int64_t buffer : {int64_t{1}, int64_t{5}, int64_t{23}}) {
    for (bool drop : {false, true}) {
      auto fast_ds = src.shuffle(buffer, 4, false).batch(4, drop);
      auto slow_ds = slow.shuffle(buffer, 4, false).batch(4, drop);
      EXPECT_EQ(collect(fast_ds, 0), collect(slow_ds, 0)) << buffer << drop;
      EXPECT_EQ(collect(fast_ds, 1), collect(slow_ds, 1)) << buffer << drop;
    }
  }
  EXPECT_EQ(collect(src.batch(5), 0), collect(slow.batch(5), 0));
  EXPECT_EQ(collect(Dataset::range(9).shuffle(9, 2).batch(4)), collect(Dataset::range(9).take(9).shuffle(9, 2).batch(4)));
  // Unbatched shuffled rows come out the same either way too.
  EXPECT_EQ(collect(src.shuffle(6, 8, false), 0), collect(slow.shuffle(6, 8, false), 0));
}

TEST(Dataset, LargeGatheredBatchesMatchWithAndWithoutPrefetch) {
  // Batches of 300 KB and more are copied by the OpenMP team on the consumer's thread; behind a
  // prefetch stage the producer hands them over as row lists. Both must give the rows the
  // element-by-element path gives, in the same order, with and without drop_remainder.
  Tensor x = Tensor::arange(0, 1000 * 300).view({1000, 300}).astype(DType::float32);
  Tensor y = Tensor::arange(0, 1000, 1, DType::int64);
  auto src = Dataset::from_tensor_slices({x, y});
  auto slow = src.map([](const Element& e) { return e; });
  for (bool drop : {false, true}) {
    auto fast_ds = src.shuffle(1000, 3, false).batch(256, drop);
    auto slow_ds = slow.shuffle(1000, 3, false).batch(256, drop);
    const auto expected_x = collect(slow_ds, 0), expected_y = collect(slow_ds, 1);
    ASSERT_EQ(expected_x.size(), drop ? 3u : 4u);
    EXPECT_EQ(collect(fast_ds, 0), expected_x);
    EXPECT_EQ(collect(fast_ds.prefetch(2), 0), expected_x);
    EXPECT_EQ(collect(fast_ds.prefetch(2), 1), expected_y);
    EXPECT_EQ(collect(fast_ds.prefetch(1).take(2), 1),
              std::vector<std::vector<double>>(expected_y.begin(), expected_y.begin() + 2));
  }
}
