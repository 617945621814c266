// One nv_fused step's exact sum, as matrixunits/nv_fused_body.hpp gives it
// (internal to matrixunits/).
#pragma once

#include <cstdint>

namespace fplab::nv_fused_body {

// One step's exact sum: `units` in units of 2^(exponent - fraction_bits);
// `taken` false when the body declined (see above).
struct FusedUnits {
  std::int64_t units = 0;
  int exponent = 0;
  bool taken = false;
};

}  // namespace fplab::nv_fused_body
