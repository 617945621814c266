// A directory of per-rank dumps, as inference engines write them, read into
// one dump: each tensor-parallel rank's shard joined into the whole tensor,
// in execution order, for bisect/dump_diff.hpp.
//
// Layout: DIR holds one folder per rank, named
//   TP<t>_PP<p>_Rank<r>_pid<pid>   SGLang's --debug-tensor-dump-output-folder
//                                  (srt/debug_utils/tensor_dump_forward_hook.py;
//                                  vLLM's flag of that name, PR 52558, is
//                                  described as writing PassN.pt per rank:
//                                  its code was not available to check)
//   rank<t> or rank_<t>            TensorRT-LLM's (rank<mpi rank>), any other
//                                  program's per-rank folders
// (docs/bisect.md lists what each engine's code writes.)
// with the same files in each (Pass00000.pt, Pass00001.pt, ...: one
// torch.save dict per forward pass, module name -> output, in the order the
// hooks fired; or any file io/array.hpp reads). A DIR with no rank folders
// is one rank: its own files. Files are taken in execution order as their
// names give it (dump_file_before): SGLang's zero-padded pass numbers, and
// TensorRT-LLM's (PR 5182, tensorrt_llm/_torch/debug/debug_hook.py:
// rank<mpi rank>/ folders of one file per module input and output,
// "<n>.<Module>-<n>.<Module>-...-<input|output>.<arg>.pt", counters not
// zero-padded); a tensor is named
// "<file stem>/<name in the file>", e.g. "Pass00000/model.layers.0.mlp";
// a file of one lone tensor (one file per op) by its stem alone, which the
// rules then match.
// Every rank must hold the same files and, in each, the same tensor names
// in the same order; pipeline stages (PP > 0) are refused.
//
// Joining the ranks, by the first rule whose pattern matches the tensor's
// name in the file ('*' matches any run of characters, the whole name must
// match); the user's rules come before the defaults:
//   concat[:D]  column-parallel outputs: the shards joined along dimension
//               D (default the last), in rank order
//   sum         row-parallel partial sums (before their all-reduce): the
//               ranks' elements added in rank order in the tensor's type
//               (float32 and float64 only; another type is refused)
//   same        replicated: every rank must hold the same bits; rank 0's is
//               taken, and a rank that differs is noted (a finding itself)
// Defaults, for vLLM's and SGLang's Llama-family module names:
//   *qkv_proj *q_proj *k_proj *v_proj *gate_up_proj *gate_proj *up_proj
//   *self_attn.attn = concat (each rank holds its heads or columns);
//   * = same (embeddings, norms, o_proj and down_proj, whose row-parallel
//   outputs these engines all-reduce inside the layer, logits).
// A rule is written PATTERN=concat, PATTERN=concat:D, PATTERN=sum or
// PATTERN=same; parse_shard_rule throws std::invalid_argument otherwise.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "io/array.hpp"

namespace fplab::bisect {

struct ShardRule {
  enum class Join { concat, sum, same };
  std::string pattern;
  Join join = Join::same;
  int dim = -1;  // concat's dimension; -1 the last
};

ShardRule parse_shard_rule(const std::string& text);

// The order of a rank folder's files: by name, but runs of digits compared
// as numbers ("2.X" before "10.X", "Pass00002" before "Pass00010"), and
// "-input." before anything else at its place (a module's "-input." files
// before its children's "-<N>." files, which come before its "-output."
// files: TensorRT-LLM's pre- and post-forward dumps in execution order).
bool dump_file_before(std::string_view a, std::string_view b);
std::string_view name(ShardRule::Join j);  // "concat", "sum", "same"
const std::vector<ShardRule>& default_shard_rules();

struct EngineDump {
  std::vector<Array> tensors;      // whole tensors, in execution order
  std::size_t ranks = 0;           // tensor-parallel ranks found
  std::vector<std::string> notes;  // "'NAME': rank R differs from rank 0 (same)"
};

// Throws InputError (one line, naming the folder or file) for a layout it
// cannot join: ranks with other files or names, shards whose shapes do not
// join, a PP > 0 folder, a rank missing from 0..T-1.
EngineDump read_engine_dump(const std::filesystem::path& dir,
                            const std::vector<ShardRule>& user_rules = {});

}  // namespace fplab::bisect
