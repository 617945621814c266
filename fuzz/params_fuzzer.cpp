// Experiment parameter values (lab/experiment.hpp, parse_param):
// the first byte picks one of the parameter kinds `fplab run --set` takes,
// the rest is the value text. A value parsed must print (records) and
// parse again to the same text.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz/fuzz_support.hpp"
#include "lab/experiment.hpp"

namespace {

const std::vector<fplab::ParamSpec>& specs() {
  using fplab::ParamSpec;
  static const std::vector<ParamSpec> all{
      ParamSpec::integer("n", "an integer", "8", "8", 1, 1e7),
      ParamSpec::integer("seed", "a seed", "1", "1", 0, 1.8e19),
      ParamSpec::real("x", "a real", "0.5"),
      ParamSpec::text("inner", "a choice", "sequential", {}, {"sequential", "pairwise", "kahan"}),
      ParamSpec::text("label", "any text", "a"),
      ParamSpec::int_list("k", "an integer list", "1,2", "1,2", 1, 64),
      ParamSpec::real_list("numbers", "a real list", "0.1,1e20,-1e20"),
      ParamSpec::text_list("formats", "a text list", "bf16", {}, {"bf16", "fp16", "fp32"}),
      ParamSpec::strategy_list("strategies", "strategies", "sequential,pairwise(8)"),
  };
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const auto& spec = specs()[data[0] % specs().size()];
  const auto text = fplab::fuzz::as_text(data + 1, size - 1);
  fplab::fuzz::expect_clean([&] {
    const fplab::ParamValue v = fplab::parse_param(spec, text);
    if (spec.check) spec.check(v);
    // The canonical text (what results.json records) parses to the same value.
    fplab::fuzz::require(fplab::parse_param(spec, fplab::param_text(v)) == v);
  });
  return 0;
}
