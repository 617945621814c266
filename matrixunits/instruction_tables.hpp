// The instructions MMA-Sim lists per architecture (isa/nv_ptx/nv_mma.py and
// isa/amd.py at c785138): PTX mma qualifiers and AMD mfma qualifiers, exactly
// as spelled there, f64 and fp4 ones included (parse_mma_spec refuses those
// as not modelled). wgmma (Hopper) and tcgen05 (Blackwell) are rules, not
// lists: matrixunits/mma_spec.cpp.
#pragma once

#include <string_view>
#include <vector>

#include "matrixunits/architecture.hpp"

namespace fplab {

// mma qualifiers for an NVIDIA architecture, mfma qualifiers for an AMD one.
std::vector<std::string_view> listed_qualifiers(MatrixArchitecture a);
// mma.block_scale qualifiers (arch_mma_block_scale_qualifiers: RTX Blackwell's).
std::vector<std::string_view> listed_block_scale_qualifiers(MatrixArchitecture a);

}  // namespace fplab
