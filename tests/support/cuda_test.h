// Shared by the GPU tests (tests/backend/test_cuda*.cpp): the skip every GPU test starts with.
// Without a CUDA device (or a CUDA build) the test reports why it skipped and passes.
#pragma once
#include <gtest/gtest.h>

#include "backend/cuda.h"

#define REQUIRE_CUDA()                                                                                 \
  do {                                                                                                 \
    if (::keras::cuda::device_count() == 0)                                                            \
      GTEST_SKIP() << "no CUDA device: " << ::keras::cuda::unavailable_reason();                       \
  } while (0)
