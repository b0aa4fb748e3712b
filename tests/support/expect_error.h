// expect_error<E>(fn, {parts...}): fn must throw E, and its message must contain every part.
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace keras::testing {

template <class E, class F>
void expect_error(F&& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "no exception";
  } catch (const E& e) {
    const std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  }
}

}  // namespace keras::testing
