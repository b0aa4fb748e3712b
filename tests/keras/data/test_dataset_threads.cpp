// Dataset pipeline threads: a parallel map and a prefetch really run off the consumer's thread
// (map calls overlapping, prefetch bounded ahead), and no thread outlives its iterator, whether
// the pass ends, is abandoned, or throws. The stages' results are tested in test_dataset.cpp.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "backend/ops.h"
#include "keras/data/dataset.h"
#include "support/dataset_values.h"
#include "support/threads.h"

using namespace keras;
using namespace keras::data;
using keras::testing::back_to;
using keras::testing::collect;
using keras::testing::thread_count;

TEST(Dataset, ParallelMapRunsOffTheCallerThreadAndConcurrently) {
  // Each call waits (at most 3 s) until a second call is in flight: a map that ran its calls one
  // at a time never sees two, and after the first timeout the later calls stop waiting.
  struct Probe {
    std::mutex mu;
    std::condition_variable cv;
    int in_flight = 0, max_in_flight = 0;
    bool gave_up = false, on_caller = false;
    std::set<std::thread::id> threads;
  };
  auto probe = std::make_shared<Probe>();
  const auto caller = std::this_thread::get_id();
  auto compute = [](const Element& e) { return Element{ops::add(ops::multiply(e[0], 2.0), 1.0)}; };
  auto probed = [probe, caller, compute](const Element& e) {
    {
      std::unique_lock lock(probe->mu);
      probe->on_caller |= std::this_thread::get_id() == caller;
      probe->threads.insert(std::this_thread::get_id());
      probe->max_in_flight = std::max(probe->max_in_flight, ++probe->in_flight);
      probe->cv.notify_all();
      if (!probe->cv.wait_for(lock, std::chrono::seconds(3), [&] { return probe->gave_up || probe->max_in_flight >= 2; }))
        probe->gave_up = true;
    }
    // Uneven work so that calls finish out of order.
    if (static_cast<int64_t>(element_as_double(e[0], 0)) % 3 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(3));
    Element out = compute(e);
    std::lock_guard lock(probe->mu);
    --probe->in_flight;
    return out;
  };
  auto src = Dataset::from_tensor_slices({Tensor::arange(0, 48).view({24, 2})});
  auto parallel = collect(src.map(probed, 4));
  EXPECT_EQ(parallel, collect(src.map(compute)));  // the order of the sequential map
  EXPECT_GE(probe->max_in_flight, 2);
  EXPECT_FALSE(probe->gave_up) << "no two calls of map(f, 4) overlapped within 3 s";
  EXPECT_FALSE(probe->on_caller) << "map(f, 4) called f on the consumer's thread";
  EXPECT_GE(probe->threads.size(), 2u);
}

TEST(Dataset, PrefetchRunsAheadOnABackgroundThread) {
  // After a map the generic prefetch stage applies (not the row copy of batch over in-memory
  // rows). The map records which elements it produced and on which thread.
  struct Produced {
    std::mutex mu;
    std::vector<int64_t> indices;
    bool on_caller = false;
  };
  auto produced = std::make_shared<Produced>();
  auto count = [produced] {
    std::lock_guard lock(produced->mu);
    return produced->indices.size();
  };
  const auto caller = std::this_thread::get_id();
  const int64_t buffer = 3;
  auto ds = Dataset::range(20)
                .map([produced, caller](const Element& e) {
                  std::lock_guard lock(produced->mu);
                  produced->indices.push_back(static_cast<int64_t>(e[0].item()));
                  produced->on_caller |= std::this_thread::get_id() == caller;
                  return e;
                }, 1)
                .prefetch(buffer);
  ops::add(Tensor::ones({4}), 1.0);  // warm up any OpenMP pool before the baseline
  const int baseline = thread_count();
  {
    auto it = ds.iterator();
    EXPECT_EQ(thread_count(), baseline + 1);
    auto first = it.next();
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ((*first)[0].item(), 0);
    // Unasked, the producer refills the buffer: elements 1..buffer.
    for (int i = 0; i < 300 && count() < static_cast<size_t>(buffer) + 1; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // room to overrun, if it would
    {
      std::lock_guard lock(produced->mu);
      ASSERT_GE(produced->indices.size(), static_cast<size_t>(buffer) + 1);
      // Bounded: the buffer, plus the one element the producer holds while it waits for space.
      EXPECT_LE(produced->indices.size(), static_cast<size_t>(buffer) + 2);
      for (size_t i = 0; i < produced->indices.size(); ++i) EXPECT_EQ(produced->indices[i], static_cast<int64_t>(i));
      EXPECT_FALSE(produced->on_caller) << "the prefetched map ran on the consumer's thread";
    }
    EXPECT_EQ(thread_count(), baseline + 1);
    for (int64_t i = 1; i < 20; ++i) EXPECT_EQ((*it.next())[0].item(), i);
    EXPECT_FALSE(it.next().has_value());
  }
  EXPECT_TRUE(back_to(baseline)) << thread_count() << " threads, " << baseline << " before";
  {
    auto it = ds.iterator();
    it.next();
  }  // abandoned with a full buffer and a blocked producer
  EXPECT_TRUE(back_to(baseline)) << thread_count() << " threads, " << baseline << " before";
}

TEST(Dataset, MapErrorsReachTheConsumerAndStopThreads) {
  const int baseline = thread_count();
  for (int64_t calls : {int64_t{1}, int64_t{3}}) {
    auto ds = Dataset::range(100)
                  .map([](const Element& e) {
                    if (e[0].item() == 17) throw IOError("bad element 17");
                    return e;
                  }, calls)
                  .batch(4)
                  .prefetch(2);
    auto it = ds.iterator();
    int batches = 0;
    try {
      while (it.next()) ++batches;
      FAIL() << "no error";
    } catch (const IOError& err) {
      EXPECT_STREQ(err.what(), "bad element 17");
    }
    EXPECT_EQ(batches, 4) << calls;  // batches 0..3 hold elements 0..15
    EXPECT_TRUE(back_to(baseline)) << thread_count() << " threads, " << baseline << " before";
    EXPECT_FALSE(it.next().has_value());
  }
}

TEST(Dataset, NoThreadLeftAfterEndOrAbandon) {
  // Warm up the op dispatch (and any OpenMP pool) before taking the baseline.
  ops::add(Tensor::ones({4}), 1.0);
  const int baseline = thread_count();
  auto ds = Dataset::from_tensor_slices({Tensor::ones({64, 3})})
                .map([](const Element& e) { return Element{ops::add(e[0], 1.0)}; }, 4)
                .prefetch(4)
                .batch(8)
                .prefetch(2);
  {
    auto it = ds.iterator();
    EXPECT_GT(thread_count(), baseline);
    int n = 0;
    while (it.next()) ++n;
    EXPECT_EQ(n, 8);
    EXPECT_TRUE(back_to(baseline));  // a finished pass has already joined its threads
  }
  {
    auto it = ds.repeat().iterator();  // abandoned mid-stream, infinite input
    for (int i = 0; i < 5; ++i) it.next();
  }
  EXPECT_TRUE(back_to(baseline));
  {
    auto it = ds.iterator();  // never read
  }
  EXPECT_TRUE(back_to(baseline));
}
