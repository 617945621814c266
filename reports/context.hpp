// The context block of a results file: what produced it (fplab's version and
// commit, the compiler and its flags, the machine, the command, the seeds).
// Timing-free: the fingerprint leaves it out.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "reports/results.hpp"

namespace fplab {

// The context block of a run on this machine, with this build.
ResultsContext collect_context(const std::string& command, bool quick,
                               const std::map<std::string, std::uint64_t>& seeds);

}  // namespace fplab
