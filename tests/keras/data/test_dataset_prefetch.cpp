// prefetch over batches of random source rows (keras/data/dataset_copy.h): no producer thread; the
// copy shared between an idle-priority thread and the consumer, or done by the consumer's OpenMP
// team. Same batches as the element-by-element path whoever copies which chunk; the idle thread
// really runs at SCHED_IDLE and never outlives its iterator; the team path starts no thread and
// splits the rows over the team.
#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "backend/omp_wait_policy.h"
#include "backend/ops.h"
#include "backend/threads.h"
#include "keras/data/dataset.h"
#include "keras/data/dataset_copy.h"
#include "support/threads.h"

using namespace keras;
using keras::data::Dataset;
using keras::data::Element;
using keras::data::detail::BatchCopier;
using keras::data::detail::ScopedBatchCopier;
using keras::testing::back_to;
using keras::testing::thread_count;
using keras::testing::threads_with_policy;

namespace {

// 600 rows of 1000 floats (4 KB: 8 rows a 32 KB chunk) and an int64 label.
std::pair<Dataset, Dataset> fast_and_slow() {
  Tensor x = Tensor::arange(0, 600 * 1000).view({600, 1000}).astype(DType::float32);
  Tensor y = Tensor::arange(0, 600, 1, DType::int64);
  auto src = Dataset::from_tensor_slices({x, y});
  auto slow = src.map([](const Element& e) { return e; });  // no row lists: element by element
  return {src, slow};
}

std::vector<std::vector<float>> values(const Element& e, size_t component) {
  return {e[component].astype(DType::float32).to_vector<float>()};
}

// A source of float rows that gathers in parts, to drive a BatchCopy by hand.
class FloatRows : public data::detail::Node {
 public:
  explicit FloatRows(Tensor x) : x_(std::move(x)) {}
  std::unique_ptr<data::detail::IteratorImpl> make_iterator() const override { return nullptr; }
  int64_t cardinality() const override { return x_.dim(0); }
  std::string name() const override { return "FloatRows"; }
  bool gathers_in_parts() const override { return true; }
  Element gather_allocate(int64_t count) const override { return {Tensor::empty({count, x_.dim(1)})}; }
  void gather_rows(const std::vector<int64_t>& rows, int64_t begin, int64_t end, Element& batch) const override {
    const int64_t cols = x_.dim(1);
    for (int64_t r = begin; r < end; ++r)
      std::copy_n(x_.data<float>() + rows[static_cast<size_t>(r)] * cols, cols, batch[0].data<float>() + r * cols);
  }

 private:
  Tensor x_;
};

}  // namespace

TEST(DatasetPrefetch, RowBatchesMatchTheElementPathWhoeverCopies) {
  auto [src, slow] = fast_and_slow();
  for (BatchCopier copier : {BatchCopier::idle_thread, BatchCopier::team}) {
    ScopedBatchCopier scope(copier);
    for (int64_t batch : {int64_t{1}, int64_t{7}, int64_t{64}, int64_t{250}}) {
      std::vector<Element> expected;
      for (const Element& e : slow.shuffle(600, 9).batch(batch).iterator()) expected.push_back(e);
      // pause 0: the consumer copies most chunks; pause 20 ms (large batches only, to stay
      // quick): the idle thread has copied the batches ahead before the consumer asks.
      for (int pause_ms : {0, 20}) {
        if (pause_ms && batch < 64) continue;
        auto it = src.shuffle(600, 9).batch(batch).prefetch(3).iterator();
        size_t i = 0;
        while (auto e = it.next()) {
          ASSERT_LT(i, expected.size());
          for (size_t c = 0; c < 2; ++c)
            EXPECT_EQ(values(*e, c), values(expected[i], c))
                << "copier " << static_cast<int>(copier) << ", batch size " << batch << ", batch " << i;
          ++i;
          if (pause_ms) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
        }
        EXPECT_EQ(i, expected.size());
      }
    }
  }
}

TEST(DatasetPrefetch, CopiesOnOneIdlePriorityThreadJoinedWithItsIterator) {
  ScopedBatchCopier idle(BatchCopier::idle_thread);
  auto [src, slow] = fast_and_slow();
  ops::add(Tensor::ones({4}), 1.0);  // warm up any OpenMP pool before the baseline
  const int baseline = thread_count(), idle_before = threads_with_policy(SCHED_IDLE);
  auto ds = src.shuffle(600, 4).batch(32).prefetch(2);
  {
    auto it = ds.iterator();
    ASSERT_TRUE(it.next().has_value());
    EXPECT_EQ(thread_count(), baseline + 1);  // the copier; no producer thread
    EXPECT_EQ(threads_with_policy(SCHED_IDLE), idle_before + 1);
    while (it.next()) {
    }
  }
  EXPECT_TRUE(back_to(baseline));
  {
    auto it = ds.repeat().iterator();  // abandoned mid-stream while batches are in flight
    for (int i = 0; i < 5; ++i) it.next();
  }
  EXPECT_TRUE(back_to(baseline));
  EXPECT_EQ(threads_with_policy(SCHED_IDLE), idle_before);
}

TEST(DatasetPrefetch, StagesBetweenBatchAndPrefetchGiveTheSameBatches) {
  auto [src, slow] = fast_and_slow();
  auto expected_ds = slow.shuffle(600, 2).batch(50).take(5);
  std::vector<std::vector<float>> expected;
  for (const Element& e : expected_ds.iterator()) expected.push_back(values(e, 0)[0]);
  std::vector<std::vector<float>> got;
  for (const Element& e : src.shuffle(600, 2).batch(50).take(5).prefetch(2).iterator())
    got.push_back(values(e, 0)[0]);
  EXPECT_EQ(got, expected);
}

TEST(DatasetPrefetch, TheConsumerWaitsBrieflyForAChunkInFlightThenCopiesAfresh) {
  // 100 rows of 8 KB: 4 rows a chunk. A helper claims chunk 0 and stalls (an idle-priority thread
  // that gets no core); a helper that finishes within the wait is waited for.
  auto source = std::make_shared<FloatRows>(Tensor::arange(0, 100 * 2048).view({100, 2048}).astype(DType::float32));
  std::vector<int64_t> rows;
  for (int64_t i = 99; i >= 0; --i) rows.push_back(i);
  std::vector<float> expected;
  for (int64_t r : rows)
    for (int64_t c = 0; c < 2048; ++c) expected.push_back(static_cast<float>(r * 2048 + c));

  Element target = source->gather_allocate(100);
  data::detail::BatchCopy stalled(source, rows, target);
  auto chunk = stalled.claim();
  ASSERT_TRUE(chunk.has_value());
  Element got = stalled.finish(std::chrono::milliseconds(1));
  EXPECT_NE(got[0].raw_data(), target[0].raw_data());  // fresh tensors, not the ones in flight
  EXPECT_EQ(got[0].to_vector<float>(), expected);
  stalled.copy(*chunk);  // the helper finishes late, into the tensors it was given
  EXPECT_EQ(got[0].to_vector<float>(), expected);

  target = source->gather_allocate(100);
  data::detail::BatchCopy slow(source, rows, target);
  chunk = slow.claim();
  std::thread helper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    slow.copy(*chunk);
  });
  got = slow.finish(std::chrono::seconds(10));
  helper.join();
  EXPECT_EQ(got[0].raw_data(), target[0].raw_data());
  EXPECT_EQ(got[0].to_vector<float>(), expected);
}

TEST(DatasetPrefetch, RowCopyEqualsOneRowAfterAnother) {
  // Rows under 256 bytes go one by one; longer ones eight at a time, a cache line of each in
  // turn, with a partial line at the end when the row length is not a multiple of 64. Rows of
  // whole lines (256, 320, 3136 bytes) into a line-aligned batch (offset 0) take the
  // cache-bypassing stores, the rest plain ones: every length, at every destination offset, must
  // give the same bytes and write nothing past the last row.
  for (size_t row_bytes :
       {size_t{1}, size_t{12}, size_t{255}, size_t{256}, size_t{272}, size_t{300}, size_t{320}, size_t{3136},
        size_t{4099}}) {
    const int64_t source_rows = 40;
    std::vector<char> src(row_bytes * source_rows);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<char>(i * 7 + i / 251);
    for (size_t offset : {size_t{0}, size_t{1}, size_t{16}}) {
      for (int64_t n : {0, 1, 7, 8, 9, 17, 40}) {
        std::vector<int64_t> idx;
        for (int64_t r = 0; r < n; ++r) idx.push_back((r * 13 + 5) % source_rows);  // out of order
        if (n > 2) idx[2] = idx[0];                                                 // and repeated
        const size_t bytes = row_bytes * static_cast<size_t>(n);
        std::vector<char> want(bytes + 1, 'x'), buffer(bytes + 1 + 64 + offset, 'x');
        for (int64_t r = 0; r < n; ++r)
          std::memcpy(want.data() + r * row_bytes, src.data() + idx[static_cast<size_t>(r)] * row_bytes, row_bytes);
        const auto base = reinterpret_cast<uintptr_t>(buffer.data());
        char* dst = buffer.data() + ((64 - base % 64) % 64 + offset);
        data::detail::copy_rows(dst, src.data(), row_bytes, idx.data(), n);
        EXPECT_EQ(std::vector<char>(dst, dst + bytes + 1), want)
            << row_bytes << " bytes a row, " << n << " rows, destination offset " << offset;
      }
    }
  }
}

TEST(DatasetPrefetch, TheTeamCopierStartsNoThread) {
  ScopedBatchCopier team(BatchCopier::team);
  auto [src, slow] = fast_and_slow();
  // 250 rows of 4 KB: past the size where the team copies. A first pass starts the OpenMP pool;
  // the second must run on it alone.
  auto ds = src.shuffle(600, 4).batch(250).prefetch(2);
  for (const Element& e : ds.iterator()) EXPECT_EQ(e.size(), 2u);
  const int baseline = thread_count(), idle_before = threads_with_policy(SCHED_IDLE);
  {
    auto it = ds.iterator();
    int batches = 0;
    while (it.next()) {
      ++batches;
      EXPECT_EQ(thread_count(), baseline);
    }
    EXPECT_EQ(batches, 3);
  }
  EXPECT_EQ(threads_with_policy(SCHED_IDLE), idle_before);
}

namespace {
// FloatRows that records which thread copied which rows.
class RecordingRows : public FloatRows {
 public:
  using FloatRows::FloatRows;
  struct Part {
    std::thread::id thread;
    int64_t begin, end;
  };
  void gather_rows(const std::vector<int64_t>& rows, int64_t begin, int64_t end, Element& batch) const override {
    {
      std::lock_guard lock(mu_);
      parts_.push_back({std::this_thread::get_id(), begin, end});
    }
    FloatRows::gather_rows(rows, begin, end, batch);
  }
  std::vector<Part> take_parts() const {
    std::lock_guard lock(mu_);
    std::sort(parts_.begin(), parts_.end(), [](const Part& a, const Part& b) { return a.begin < b.begin; });
    return std::exchange(parts_, {});
  }

 private:
  mutable std::mutex mu_;
  mutable std::vector<Part> parts_;
};
}  // namespace

TEST(DatasetPrefetch, CopyBatchSplitsTheRowsEvenlyOverTheTeam) {
  // 101 rows of 8 KB (808 KB, worth a team), in reverse order.
  auto source = std::make_shared<RecordingRows>(Tensor::arange(0, 101 * 2048).view({101, 2048}).astype(DType::float32));
  std::vector<int64_t> rows;
  for (int64_t i = 100; i >= 0; --i) rows.push_back(i);
  std::vector<float> expected;
  for (int64_t r : rows)
    for (int64_t c = 0; c < 2048; ++c) expected.push_back(static_cast<float>(r * 2048 + c));
  const int before = num_threads();
  for (int team : {1, 2, 3}) {
    set_num_threads(team);
    Element got = data::detail::copy_batch(*source, rows);
    EXPECT_EQ(got[0].to_vector<float>(), expected) << team << " threads";
    const auto parts = source->take_parts();
    // omp_set_num_threads is an upper bound: a team may come out smaller (no more cores).
    ASSERT_GE(parts.size(), 1u);
    ASSERT_LE(parts.size(), static_cast<size_t>(team));
    if (team > 1) EXPECT_GT(parts.size(), 1u) << "one thread copied the whole batch";
    std::vector<std::thread::id> copiers;
    for (const auto& part : parts) copiers.push_back(part.thread);
    std::sort(copiers.begin(), copiers.end());
    EXPECT_EQ(std::unique(copiers.begin(), copiers.end()), copiers.end()) << "a thread copied two parts";
    int64_t next = 0;
    for (const auto& part : parts) {
      EXPECT_EQ(part.begin, next);  // contiguous, disjoint, covering every row
      EXPECT_LE(part.end - part.begin, (101 + static_cast<int64_t>(parts.size()) - 1) / static_cast<int64_t>(parts.size()));
      next = part.end;
    }
    EXPECT_EQ(next, 101);
  }
  set_num_threads(before);
  // A pipeline thread never forks a team of its own (it would fight the training step's team),
  // and a batch too small to pay for the fork is copied by the caller alone.
  std::thread worker([&] {
    data::detail::PipelineThreadScope pipeline_thread;
    EXPECT_EQ(data::detail::copy_batch(*source, rows)[0].to_vector<float>(), expected);
  });
  worker.join();
  EXPECT_EQ(source->take_parts().size(), 1u);
  data::detail::copy_batch(*source, {3, 1, 2});
  EXPECT_EQ(source->take_parts().size(), 1u);
}

TEST(DatasetPrefetch, TheDefaultCopierFollowsHowOpenMPThreadsWait) {
  // The variables are read when a pass starts; libgomp itself read them at start-up, so this
  // checks the choice, not libgomp.
  auto saved = [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  const auto policy = saved("OMP_WAIT_POLICY"), spincount = saved("GOMP_SPINCOUNT");
  const int threads = num_threads();
  unsetenv("OMP_WAIT_POLICY");
  unsetenv("GOMP_SPINCOUNT");

  set_num_threads(available_cores());  // libgomp's default: a spinning team on every core
  EXPECT_EQ(data::detail::batch_copier(), BatchCopier::team);
  {
    ScopedBatchCopier idle(BatchCopier::idle_thread);
    EXPECT_EQ(data::detail::batch_copier(), BatchCopier::idle_thread);
  }
  EXPECT_EQ(data::detail::batch_copier(), BatchCopier::team);
  setenv("OMP_WAIT_POLICY", "passive", 1);  // sleeping threads leave cores to an idle thread
  EXPECT_EQ(data::detail::batch_copier(), BatchCopier::idle_thread);
  unsetenv("OMP_WAIT_POLICY");
  set_num_threads(available_cores() + 1);  // libgomp barely spins an oversubscribed team
  EXPECT_EQ(data::detail::batch_copier(), BatchCopier::idle_thread);
  if (available_cores() > 1) {
    set_num_threads(available_cores() - 1);  // a core the team leaves free
    EXPECT_EQ(data::detail::batch_copier(), BatchCopier::idle_thread);
  }

  set_num_threads(threads);
  if (policy) setenv("OMP_WAIT_POLICY", policy->c_str(), 1);
  if (spincount) setenv("GOMP_SPINCOUNT", spincount->c_str(), 1);
}
