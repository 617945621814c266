#include "reductions/flag_variants.hpp"

#include <vector>

namespace fplab {

namespace variants {
#define FPLAB_FLAG_VARIANT(id) FlagVariant make_##id();
#include "flag_variant_list.inc"
#undef FPLAB_FLAG_VARIANT
}  // namespace variants

std::span<const FlagVariant> flag_variants() {
  static const std::vector<FlagVariant> all = {
#define FPLAB_FLAG_VARIANT(id) variants::make_##id(),
#include "flag_variant_list.inc"
#undef FPLAB_FLAG_VARIANT
  };
  return all;
}

}  // namespace fplab
