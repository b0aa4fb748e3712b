// Tests on bfloat16 bits for the CPU's bfloat16 kernels, in 16-bit integer lanes so that their
// loops vectorise without branches (a branch on random signs mispredicts half the time).
#pragma once
#include <cstdint>

namespace keras::cpu {

// b > 0 exactly when b is positive as an int16 and not a NaN (above 0x7f80, infinity).
inline bool bf16_positive(uint16_t b) { return (static_cast<int16_t>(b) > 0) & (b <= 0x7f80u); }
// b is a NaN when its magnitude bits exceed 0x7f80.
inline bool bf16_is_nan(uint16_t b) { return static_cast<int16_t>(b & 0x7fffu) > 0x7f80; }
// All ones where `keep`, else zero: a mask to AND bits with.
inline uint16_t bf16_mask(bool keep) { return static_cast<uint16_t>(-static_cast<int>(keep)); }

}  // namespace keras::cpu
