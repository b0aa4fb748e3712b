// The per-op kernel profile: counts calls per op and first-input shape only while switched on.
#include <gtest/gtest.h>

#include "backend/op_profile.h"
#include "backend/ops.h"

using namespace keras;

namespace {
const OpProfileEntry* find(const std::vector<OpProfileEntry>& v, const std::string& op, const std::string& shape) {
  for (const auto& e : v)
    if (e.op == op && e.shape == shape) return &e;
  return nullptr;
}
}  // namespace

TEST(OpProfile, CountsCallsOnlyWhileOn) {
  Tensor a = Tensor::ones({2, 3}), b = Tensor::ones({4});
  reset_op_profile();
  ops::add(a, a);  // off: not counted
  set_op_profiling(true);
  EXPECT_TRUE(op_profiling());
  ops::add(a, a);
  ops::add(a, a);
  ops::add(b, b);
  set_op_profiling(false);
  ops::add(a, a);
  auto prof = op_profile();
  const OpProfileEntry* e23 = find(prof, "add", "(2, 3)");
  const OpProfileEntry* e4 = find(prof, "add", "(4,)");
  ASSERT_NE(e23, nullptr);
  ASSERT_NE(e4, nullptr);
  EXPECT_EQ(e23->calls, 2u);
  EXPECT_EQ(e4->calls, 1u);
  EXPECT_GE(e23->seconds, 0.0);
  EXPECT_GE(e23->cpu_seconds, 0.0);
  reset_op_profile();
  EXPECT_TRUE(op_profile().empty());
}
