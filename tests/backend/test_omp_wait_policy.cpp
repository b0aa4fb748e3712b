// backend/omp_wait_policy.h: libgomp's rules for whether idle OpenMP threads spin, from the
// variables' text, the team size and the cores.
#include <gtest/gtest.h>

#include "backend/omp_wait_policy.h"

using keras::omp_threads_spin;

TEST(OmpWaitPolicy, UnsetOrActiveSpinsPassiveSleeps) {
  EXPECT_TRUE(omp_threads_spin(nullptr, nullptr, 2, 2));
  EXPECT_TRUE(omp_threads_spin("active", nullptr, 2, 2));
  EXPECT_TRUE(omp_threads_spin(" ACTIVE ", nullptr, 1, 4));
  EXPECT_FALSE(omp_threads_spin("passive", nullptr, 2, 2));
  EXPECT_FALSE(omp_threads_spin("  Passive\n", nullptr, 2, 2));
  // libgomp ignores values it cannot read, as if unset.
  EXPECT_TRUE(omp_threads_spin("passively", nullptr, 2, 2));
  EXPECT_TRUE(omp_threads_spin("", nullptr, 2, 2));
}

TEST(OmpWaitPolicy, SpinCountWinsOverThePolicy) {
  EXPECT_FALSE(omp_threads_spin(nullptr, "0", 2, 2));
  EXPECT_FALSE(omp_threads_spin("active", " 000 ", 2, 2));
  EXPECT_TRUE(omp_threads_spin("passive", "10000", 2, 2));
  EXPECT_TRUE(omp_threads_spin("passive", "3k", 2, 2));
  EXPECT_TRUE(omp_threads_spin("passive", "infinite", 2, 2));
  EXPECT_TRUE(omp_threads_spin("passive", "Infinity", 2, 2));
  EXPECT_TRUE(omp_threads_spin("passive", " 10 k ", 2, 2));
  EXPECT_FALSE(omp_threads_spin(nullptr, "0 M", 2, 2));
  // Unreadable counts are ignored: the policy decides.
  EXPECT_FALSE(omp_threads_spin("passive", "many", 2, 2));
  EXPECT_FALSE(omp_threads_spin("passive", "10 kilo", 2, 2));
  EXPECT_FALSE(omp_threads_spin("passive", "10x", 2, 2));
  EXPECT_FALSE(omp_threads_spin("passive", "infinitely", 2, 2));
  EXPECT_FALSE(omp_threads_spin("passive", "", 2, 2));
  EXPECT_TRUE(omp_threads_spin(nullptr, "many", 2, 2));
}

TEST(OmpWaitPolicy, ATeamLargerThanTheCoresBarelySpins) {
  EXPECT_FALSE(omp_threads_spin(nullptr, nullptr, 3, 2));
  EXPECT_FALSE(omp_threads_spin("active", "infinite", 5, 4));
  EXPECT_TRUE(omp_threads_spin(nullptr, nullptr, 4, 4));
}
