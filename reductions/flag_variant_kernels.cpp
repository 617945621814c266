// One copy of the reduction kernels, compiled per flag variant with
// -DFPLAB_VARIANT=<identifier> -DFPLAB_VARIANT_NAME="..." -DFPLAB_VARIANT_FLAGS="...".
//
// Renaming the namespaces (ours and Eigen's) before including the sources
// gives every template instantiation a distinct symbol; otherwise the linker
// would keep one copy of, say, an -O0 and an -ffast-math instantiation and
// silently use it everywhere.
#define FPLAB_CAT_(a, b) a##b
#define FPLAB_CAT(a, b) FPLAB_CAT_(a, b)

#define fplab FPLAB_CAT(fplab_variant_, FPLAB_VARIANT)
#define Eigen FPLAB_CAT(Eigen_variant_, FPLAB_VARIANT)
// The .cpp includes are the point: the same sources, compiled again.
// NOLINTBEGIN(bugprone-suspicious-include)
#include "reductions/eigen_sum.cpp"
#include "reductions/exact.cpp"
#include "reductions/strategy.cpp"
// exact's results are rounded by precision/ (the one rounding engine).
#include "precision/format.cpp"
#include "precision/rounding.cpp"
// NOLINTEND(bugprone-suspicious-include)
#undef Eigen
#undef fplab

#include "reductions/flag_variants.hpp"

namespace fplab::variants {

namespace impl = FPLAB_CAT(fplab_variant_, FPLAB_VARIANT);

namespace {
template <class T>
T sum_kernel(std::string_view strategy, const T* x, std::size_t n) {
  return impl::sum(impl::parse_strategy(strategy), std::span<const T>(x, n));
}
template <class T>
T dot_kernel(std::string_view strategy, const T* x, const T* y, std::size_t n) {
  return impl::dot(impl::parse_strategy(strategy), std::span<const T>(x, n),
                   std::span<const T>(y, n));
}
}  // namespace

FlagVariant FPLAB_CAT(make_, FPLAB_VARIANT)() {
  return {FPLAB_VARIANT_NAME,  FPLAB_VARIANT_FLAGS, FPLAB_VARIANT_CPU_DEPENDENT, &sum_kernel<float>,
          &sum_kernel<double>, &dot_kernel<float>,  &dot_kernel<double>};
}

}  // namespace fplab::variants
