// The reduction kernels compiled again under other compiler flags.
//
// Each variant is a complete copy of reductions/ (and of the Eigen code it
// uses), built from reductions/flag_variant_kernels.cpp with its own flags
// and its own namespaces, so the copies cannot be merged by the linker. The
// `strict` variant is built with the same flags as the library itself; the
// others are the flags a team might ship with by accident or on purpose.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

namespace fplab {

struct FlagVariant {
  std::string_view name;   // e.g. "O3-march-native"
  std::string_view flags;  // the compiler flags it was built with
  // Whether its results may legitimately depend on the CPU it runs on
  // (-march=native), so a committed baseline cannot hold them.
  bool cpu_dependent;
  // The strategy is named as in reductions/strategy.hpp; throws
  // std::invalid_argument for a bad name.
  float (*sum_float)(std::string_view strategy, const float* x, std::size_t n);
  double (*sum_double)(std::string_view strategy, const double* x, std::size_t n);
  float (*dot_float)(std::string_view strategy, const float* x, const float* y, std::size_t n);
  double (*dot_double)(std::string_view strategy, const double* x, const double* y, std::size_t n);
};

// Every variant this build has, the strict baseline first.
std::span<const FlagVariant> flag_variants();

}  // namespace fplab
