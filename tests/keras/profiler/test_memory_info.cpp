// keras::debugging::memory_info: the allocators' statistics by device name, as
// tf.config.experimental.get_memory_info / reset_memory_stats.
#include <gtest/gtest.h>

#include "backend/cuda.h"
#include "backend/errors.h"
#include "backend/tensor.h"
#include "keras/profiler/memory_info.h"

using namespace keras;

namespace {
constexpr size_t kBytes = 1 << 20;
Tensor megabyte(Device d = Device::cpu()) { return Tensor::empty({static_cast<int64_t>(kBytes / 4)}, DType::float32, d); }
}  // namespace

TEST(MemoryInfo, ReportsTheAllocatorByDeviceName) {
  debugging::reset_memory_stats("cpu");
  const auto base = debugging::memory_info();
  EXPECT_EQ(base.peak_bytes, base.current_bytes);
  Tensor t = megabyte();
  const auto info = debugging::memory_info("cpu");
  EXPECT_EQ(info.current_bytes, base.current_bytes + kBytes);
  EXPECT_EQ(info.peak_bytes, info.current_bytes);
  EXPECT_EQ(debugging::memory_info(Device::cpu()).current_bytes, info.current_bytes);
  EXPECT_THROW(debugging::memory_info("tpu"), ValueError);
  if (!cuda::built()) {
    EXPECT_THROW(debugging::memory_info("gpu"), DeviceError);
  } else if (cuda::device_count() == 0) {
    EXPECT_EQ(debugging::memory_info("gpu").current_bytes, 0u);
  }
  EXPECT_EQ(debugging::human_bytes(1536), "1.50 KiB");
  EXPECT_EQ(debugging::human_bytes(12), "12 B");
  EXPECT_NE(debugging::memory_info_str(info).find("current "), std::string::npos);
}

TEST(MemoryInfo, CudaTensorsAreCountedOnTheirDevice) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device: " << cuda::unavailable_reason();
  debugging::reset_memory_stats("cuda:0");
  const auto base = debugging::memory_info("cuda:0");
  {
    Tensor t = megabyte(Device::cuda(0));
    const auto during = debugging::memory_info("cuda:0");
    EXPECT_EQ(during.current_bytes, base.current_bytes + kBytes);
    EXPECT_EQ(during.peak_bytes, during.current_bytes);
  }
  EXPECT_EQ(debugging::memory_info("cuda:0").current_bytes, base.current_bytes);
  EXPECT_EQ(cuda::allocator_stats(0).peak_bytes_in_use, base.current_bytes + kBytes);
}
