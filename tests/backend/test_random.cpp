// The random generator shared by a program (global_generator) is drawn from by every thread that
// runs random ops, e.g. a parallel Dataset.map doing augmentation while the model trains.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "backend/random.h"

using namespace keras;

TEST(Generator, AdvanceFromManyThreadsHandsOutEachBlockOnce) {
  Generator gen(3);
  constexpr uint64_t kPerThread = 200000;
  std::vector<std::vector<uint64_t>> got(4);
  std::vector<std::thread> threads;
  for (auto& mine : got)
    threads.emplace_back([&gen, &mine] {
      mine.reserve(kPerThread);
      for (uint64_t i = 0; i < kPerThread; ++i) mine.push_back(gen.advance(1));
    });
  for (auto& t : threads) t.join();
  std::vector<uint64_t> all;
  for (const auto& mine : got) all.insert(all.end(), mine.begin(), mine.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "a counter handed out twice";
  EXPECT_EQ(gen.advance(1), 4 * kPerThread);  // none lost
}

TEST(Generator, CopiesContinueFromTheSamePoint) {
  Generator a(11);
  a.advance(5);
  Generator b = a;
  EXPECT_EQ(b.seed(), 11u);
  EXPECT_EQ(b.advance(2), 5u);
  EXPECT_EQ(a.advance(1), 5u);  // the copy is independent
  Generator c(1);
  c = b;
  EXPECT_EQ(c.advance(1), 7u);
}
