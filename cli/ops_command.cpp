// fplab ops: the forward pass's ops (model/forward_ops.hpp) of a model, in
// execution order, with each op's reduction length and the order a policy
// gives it (--policy, per-op overrides included), and for split-k the
// number of K splits at --rows rows per pass, and the precision each op
// runs under (--precision, per-op overrides included). Under each fused op
// its named reductions (attention's scores, softmax, pv), and with --tp T
// each row-parallel op's all-reduce: names a --policy override may address.
#include <fmt/format.h>

#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "cli/numeric_options.hpp"
#include "model/forward_ops.hpp"
#include "model/policy.hpp"
#include "model/split_rule.hpp"
#include "model/tensor_parallel.hpp"
#include "model/transformer.hpp"

namespace fplab::cli {

namespace {

struct OpsOptions {
  std::string model;
  std::string policy = "batch-invariant";
  std::string precision = "fp32";
  std::size_t rows = 1;
  std::size_t tp = 1;
};

// What the op adds up, in words.
std::string reduction_text(const model::Op& op) {
  switch (op.kind) {
    case model::OpKind::linear:
      return fmt::format("dot {}", op.in_features);
    case model::OpKind::rmsnorm:
      return fmt::format("sum of squares {}", op.in_features);
    case model::OpKind::attention:
      return "fused: the three below";
    case model::OpKind::router:
      return fmt::format("dot {}, then top-k", op.in_features);
    case model::OpKind::combine:
      return fmt::format("sum of {} experts", op.in_features);
    default:
      return "-";
  }
}

// What an inner reduction of `op` (addressable_names' entry `part`) adds up.
std::string part_text(const model::Op& op, const std::string& part, std::size_t tp) {
  if (part == model::all_reduce_name(op)) return fmt::format("sum of {} partials", tp);
  if (part.ends_with(".scores")) return fmt::format("dot {}", op.in_features);
  if (part.ends_with(".softmax")) return "sum over KV parts";
  return "dot over KV parts";  // pv
}

}  // namespace

void add_ops_command(CLI::App& app) {
  auto o = std::make_shared<OpsOptions>();
  auto* cmd = app.add_subcommand(
      "ops", "List the forward pass's named ops, their reductions and their orders under a policy");
  cmd->add_option("--model", o->model,
                  "Model file (default: $FPLAB_MODEL, else model/data/kjv-char.safetensors)");
  cmd->add_option("--policy", o->policy,
                  "Reduction policy and per-op overrides, e.g. library,layers.*.mlp.*=split-k")
      ->capture_default_str();
  cmd->add_option("--precision", o->precision,
                  "Precision and per-op overrides, e.g. bf16,lm_head=fp32")
      ->capture_default_str();
  cmd->add_option("--rows", o->rows, "Rows per pass for split-k's split counts (1: a decode step)")
      ->capture_default_str()
      ->check(integer_in(1, std::uint64_t{1} << 20));
  cmd->add_option("--tp", o->tp, "Tensor-parallel degree: lists each row-parallel op's all-reduce")
      ->capture_default_str()
      ->check(integer_in(1, 64));
  cmd->footer(
      "Examples:\n"
      "  fplab ops                                         the bundled model's ops\n"
      "  fplab ops --policy library,layers.*.mlp.*=split-k  each op's order under a policy\n"
      "  fplab ops --model HuggingFaceTB/SmolLM2-135M --tp 3\n"
      "                                                    a checkpoint's ops, split over 3 ranks");
  cmd->callback([o] {
    const model::Policy policy = model::parse_policy(o->policy, o->precision);
    const model::Model m = model::Model::load(o->model);
    // A Batch checks every override against the ops, as generate does.
    const model::Batch batch(m, policy, 1, model::TensorParallel{.degree = o->tp});
    fmt::print("{:<4} {:<40} {:<10} {:<30} {:<10} {}\n", "#", "op", "kind", "reduction",
               "precision", "order");
    for (std::size_t i = 0; i < m.ops().size(); ++i) {
      const model::Op& op = m.ops()[i];
      // A gpu order is spelt with its kernel order (a fused op's: its first part's).
      const std::string& first = op.reductions.empty() ? op.name : op.reductions.front();
      std::string order =
          op.reduces()
              ? model::order_spec(batch.order(i), batch.policy().gpu_order_of(op.name, first))
              : "-";
      if (const std::size_t s = model::op_splits(batch.order(i), op, o->rows);
          op.reduces() && s > 1)
        order += fmt::format(" ({} splits)", s);
      fmt::print("{:<4} {:<40} {:<10} {:<30} {:<10} {}\n", i, op.name, model::name(op.kind),
                 reduction_text(op), model::name(batch.precision(i)), order);
      // Its inner reductions take its order (Batch refuses a policy that splits them).
      const auto names = model::addressable_names(op, o->tp);
      for (std::size_t k = 1; k < names.size(); ++k) {
        const bool all_reduce = names[k] == model::all_reduce_name(op);
        const std::string part_order = all_reduce ? std::string(name(model::tp_allreduce_order(
                                                        batch.order(i), batch.tensor_parallel())))
                                                  : order;
        fmt::print("{:<4} {:<40} {:<10} {:<30} {:<10} {}\n", "", "  " + names[k], "",
                   part_text(op, names[k], o->tp), "", part_order);
      }
    }
  });
}

}  // namespace fplab::cli
