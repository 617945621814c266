#include "sampling/generate_request.hpp"

#include "io/numbers.hpp"

namespace fplab::sampling {

std::vector<std::string> GenerateRequest::to_args() const {
  std::vector<std::string> a;
  const auto option = [&a](const char* flag, std::string value) {
    a.emplace_back(flag);
    a.push_back(std::move(value));
  };
  const auto text = [&option](const char* flag, const std::string& value) {
    if (!value.empty()) option(flag, value);
  };
  const auto flag = [&a](const char* name, bool set) {
    if (set) a.emplace_back(name);
  };
  if (steps != 0) option("--steps", std::to_string(steps));
  option("--samples", std::to_string(samples));
  if (batch != 0) option("--batch", std::to_string(batch));
  flag("--json", json);
  option("--temperature", to_decimal(temperature));
  option("--top-k", std::to_string(top_k));
  option("--top-p", to_decimal(top_p));
  option("--presence-penalty", to_decimal(presence));
  option("--frequency-penalty", to_decimal(frequency));
  option("--repetition-penalty", to_decimal(repetition));
  option("--order", order);
  option("--seed", std::to_string(seed));
  option("--precision", precision);
  option("--policy", policy);
  if (split_k != 0) option("--split-k", std::to_string(split_k));
  text("--model", model);
  option("--tp", std::to_string(tp));
  option("--allreduce", allreduce);
  flag("--tp-in-process", tp_in_process);
  text("--logits", logits);
  text("--dump", dump);
  text("--gate", gate);
  option("--timeout", to_decimal(timeout));
  text("--tp-rank-out", tp_rank_out);
  if (tp_fail_rank >= 0) option("--tp-fail-rank", std::to_string(tp_fail_rank));
  if (from_ids) {
    option("--prompt-ids", prompt_ids);
  } else {
    a.emplace_back("--");
    a.push_back(prompt);
  }
  return a;
}

}  // namespace fplab::sampling
