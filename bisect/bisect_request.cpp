#include "bisect/bisect_request.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "bisect/bisect.hpp"
#include "bisect/dump_diff.hpp"
#include "bisect/engine_dumps.hpp"
#include "model/policy.hpp"
#include "model/transformer.hpp"

namespace fplab::bisect {

std::vector<std::string> BisectRequest::to_args() const {
  std::vector<std::string> args;
  const auto text = [&args](const char* flag, const std::string& value) {
    if (!value.empty()) args.push_back(fmt::format("--{}={}", flag, value));
  };
  const auto each = [&args](const char* flag, const std::vector<std::string>& values) {
    for (const auto& v : values) args.push_back(fmt::format("--{}={}", flag, v));
  };
  const auto flag = [&args](const char* name, bool set) {
    if (set) args.push_back(fmt::format("--{}", name));
  };
  text("model", model);
  text("prompt", prompt);
  args.push_back("--policy=" + policy);
  args.push_back("--precision=" + precision);
  args.push_back("--steps=" + std::to_string(steps));
  each("a", a);
  each("b", b);
  if (!dumps.empty()) {
    args.emplace_back("--dumps");
    args.insert(args.end(), dumps.begin(), dumps.end());
  }
  each("shard", shard);
  flag("json", json);
  flag("no-minimal", no_minimal);
  flag("no-ranking", no_ranking);
  flag("ranking", ranking);
  flag("per-op", per_op);
  return args;
}

std::string bisect_output(const BisectReport& r, bool json) {
  return json ? bisect_to_json(r).dump(2) + "\n" : format_bisect(r);
}

namespace {

std::string run_dumps(const BisectRequest& o) {
  if (!o.prompt.empty() || !o.a.empty() || !o.b.empty())
    throw std::invalid_argument("--dumps takes no --prompt, --a or --b");
  std::vector<ShardRule> rules;
  for (const auto& r : o.shard) rules.push_back(parse_shard_rule(r));
  const auto d = bisect_dumps(o.dumps[0], o.dumps[1], rules);
  if (o.json) return dump_bisect_to_json(d).dump(2) + "\n";
  return format_dump_bisect(d, o.dumps[0], o.dumps[1]);
}

}  // namespace

std::string run_bisect_request(const BisectRequest& o, const BisectHooks& hooks) {
  if (!o.dumps.empty()) return run_dumps(o);
  if (o.prompt.empty()) throw std::invalid_argument("bisect needs --prompt (or --dumps A B)");
  Setting a, b;
  for (const auto& kv : o.a) apply_setting(a, kv);
  for (const auto& kv : o.b) apply_setting(b, kv);
  const model::Model m = model::Model::load(o.model);
  Request r;
  r.model = &m;
  r.prompt = m.tokenizer().encode(o.prompt);
  r.steps = o.steps;
  r.policy = model::parse_policy(o.policy, o.precision);
  const std::string left_out =
      o.ranking || o.no_ranking ? std::string() : ranking_left_out_by_default(m);
  if (hooks.ranking_left_out) hooks.ranking_left_out(left_out);
  auto report = run_bisect(r, o.prompt, a, b, !o.no_minimal, !o.no_ranking && left_out.empty(),
                           hooks.update, !o.per_op);
  if (!left_out.empty()) report.ranking_left_out = left_out;
  return bisect_output(report, o.json);
}

}  // namespace fplab::bisect
