#include "lab/claims.hpp"

#include <stdexcept>
#include <string>

namespace fplab {
namespace {

// Each source with its address (docs/claims.md lists them all; "address not
// found" where none could be found).
constexpr std::string_view kTml =
    "Thinking Machines Lab (TML), \"Defeating Nondeterminism in LLM Inference\", 2025, "
    "https://thinkingmachines.ai/blog/defeating-nondeterminism-in-llm-inference/";
constexpr std::string_view kArticle =
    "a popular article quoting Thinking Machines Lab (TML), \"Defeating Nondeterminism in LLM "
    "Inference\", 2025 (the article: address not found; docs/claims.md)";
constexpr std::string_view kBook =
    "a book chapter on sampling and determinism (address not found; docs/claims.md)";
constexpr std::string_view kChapter =
    "chapter, Qwen2.5-0.5B-Instruct, CPU, float32 (address not found; docs/claims.md)";
constexpr std::string_view kSampling =
    "a book chapter on sampling and determinism (Qwen2.5-0.5B-Instruct; address not found; "
    "docs/claims.md)";

constexpr Claim kClaims[] = {
    // ---- arithmetic
    {"A1", "(0.1 + 1e20) - 1e20 is 0.0, 0.1 + (1e20 - 1e20) is 0.1", kTml,
     "(0.1 + 1e20) - 1e20 = 0.0, 0.1 + (1e20 - 1e20) = 0.1 in double"},
    {"A2",
     "\"eight numbers that should cancel exactly produce 102 distinct totals among the 40,320 "
     "possible orders\"",
     kArticle, "102 distinct totals among the 40,320 possible orders"},
    {"A3", "\"repeated with 4,096 numbers in 255 different groupings: 17 distinct totals\"",
     kArticle, "17 distinct totals"},
    {"A4",
     "one million float32 numbers summed in different groupings (claims.md's A4 table: "
     "sequential, pairwise (numpy), in 4, 8 and 16 chunks, each with its error vs float64)",
     kBook,
     "float64 998.570662770; sequential 998.564270020; pairwise (numpy) 998.570556641; in 4 "
     "chunks 998.570495605; in 8 chunks 998.570556641; in 16 chunks 998.570678711"},
    {"A5",
     "bfloat16 keeps 7 explicit mantissa bits: near 16 the representable values are 16.0, "
     "16.125, 16.25 (spacing 0.125), so rounding can move a logit by up to 0.0625",
     kBook,
     "7 explicit bits; near 16: 16.0, 16.125, 16.25 (spacing 0.125); rounding moves a logit by up "
     "to 0.0625"},
    // ---- inference
    {"B1", "same prompt, batch of 1, 20 identical forward passes: 20/20 bit-identical", kChapter,
     "20/20 bit-identical"},
    {"B2",
     "same prompt inside a batch of 2/4/8/16: 147,321 / 146,515 / 146,515 / 147,321 of 151,936 "
     "logits differ; largest change 2.5e-05",
     kChapter,
     "147,321 / 146,515 / 146,515 / 147,321 of 151,936 logits differ (96.4-97.0 %), largest "
     "change 2.5e-05"},
    {"B3",
     "over 717 greedy steps on 12 prompts, the smallest top-2 logit gap is 2.5e-3, 100x the "
     "batching perturbation: no token flips in float32",
     kChapter,
     "smallest gap 2.5e-3 over 717 steps, 100x the batching perturbation: no flips in float32"},
    {"B4", "4.7 % of greedy steps have a top-2 gap below 0.1", kChapter, "4.7 % of greedy steps"},
    {"B5",
     "float32 vs bfloat16, same weights, greedy: 6 of 8 answers diverge, first divergence at step "
     "23 on average",
     kChapter, "6 of 8 answers diverge, first divergence at step 23 on average"},
    {"B6",
     "1,000 identical requests at temperature 0: 80 distinct completions, all identical up to "
     "token 102, split at token 103 (992 vs 8)",
     "Thinking Machines Lab (TML), Qwen3-235B-A22B on a GPU server, "
     "https://thinkingmachines.ai/blog/defeating-nondeterminism-in-llm-inference/",
     "80 distinct completions of 1,000; first split at token 103 (992 vs 8)"},
    {"B7",
     "batch-invariant kernels cost speed: vLLM default 26 s vs 42 s batch-invariant (+61.5 %) for "
     "1,000 Qwen3-8B completions; TML's batch-invariant matmul about 20 % slower than cuBLAS; "
     "SGLang deterministic mode +24.4 % to +55.1 % end to end (mean 34.35 %)",
     "Thinking Machines Lab (TML), "
     "https://thinkingmachines.ai/blog/defeating-nondeterminism-in-llm-inference/; SGLang blog, "
     "https://lmsys.org/blog/2025-09-22-sglang-deterministic",
     "+61.5 % (vLLM), about +20 % (TML matmul), +24.4 % to +55.1 % (SGLang, mean 34.35 %)"},
    {"B8",
     "batch-invariant kernels: no split-K, one kernel configuration for every shape; decode "
     "attention splits the KV sequence by a fixed split size (1000 = 256+256+256+232), not a fixed "
     "number of splits",
     "Thinking Machines Lab (TML), "
     "https://thinkingmachines.ai/blog/defeating-nondeterminism-in-llm-inference/",
     "no split-K; one configuration for every shape; fixed split size (1000 = 256+256+256+232)"},
    {"B9", "PyTorch: (A@B)[0] is not guaranteed bitwise equal to A[0]@B",
     "PyTorch numerical accuracy notes, "
     "https://pytorch.org/docs/stable/notes/numerical_accuracy.html",
     "(A@B)[0] is not guaranteed bitwise equal to A[0]@B"},
    {"B10",
     "batch invariance needs batch-invariant kernels for three ops: matmul, RMSNorm and "
     "attention",
     kTml, "matmul, RMSNorm and attention need batch-invariant kernels"},
    {"B11",
     "batch-induced token flips are sparse: 0.3-1.3 % of synchronous bf16 decode steps "
     "(Llama-3.1-8B "
     "0.48 % on MATH500); a gate that verifies only low-margin steps restores 100 % sequence-level "
     "determinism with verifier trigger rates of 18.56 % (Llama-3.1-8B) and 15.05 % (Qwen2.5-14B)",
     "MarginGate, arXiv 2605.30218 (Chu, Zhou, Zhang, 2026)",
     "flips on 0.3-1.3 % of decode steps; the gate fires on 15.05-18.56 % of steps for 100 % "
     "determinism"},
    {"B12",
     "decode with fast batch-variant kernels, replay each window of tokens (64 by default) under a "
     "fixed-shape reduction schedule, commit the consistent ones and roll back from the first "
     "mismatch: deterministic output without batch-invariant kernels",
     "LLM-42, arXiv 2601.17768 (Gond, Kamath, Ramjee, Panwar), microsoft/llm-42 "
     "(--llm42-window-size 64)",
     "windows of 64 tokens, rollback on mismatch, deterministic output"},
    // ---- sampling
    {"C1",
     "temperature divides the logits before the softmax; scaling probabilities instead changes "
     "nothing; T -> 0 is argmax, large T flattens toward uniform; no temperature reorders the "
     "tokens",
     kSampling,
     "exact properties: temperature acts on logits, probability scaling is a no-op after "
     "renormalisation, T -> 0 is argmax, large T is uniform, no reordering"},
    {"C2",
     "at T = 2, on a one-answer factual prompt, 32,966 distinct tokens share the top 90 % of the "
     "probability mass",
     kSampling,
     "32,966 of 151,936 tokens (21.7 %) share the top 90 % at T = 2 (the leader holds 96.90 % at "
     "T = 1, C3)"},
    {"C3",
     "top-p = 0.9 keeps 1 token on a confident prompt (the leader holds 96.90 % at T = 1) and 467 "
     "on an open one; top-k = 40 admits 39 tokens worth 3.6 % on the confident prompt and discards "
     "21 % of the mass on the open one",
     kSampling,
     "top-p 0.9: 1 token on the confident prompt (leader 96.90 %), 467 (0.31 % of V) on the open "
     "one; top-k 40 admits 39 tokens worth 3.6 % on the confident prompt and discards 21 % on the "
     "open one"},
    {"C4",
     "greedy decoding of an open prompt loops: 87.6 % of 4-grams repeated over 140 steps (85.5 % "
     "over 120); over 120 steps a presence penalty of 0.5 changed 3 decisions, a frequency "
     "penalty of 0.5 about four times more, the CTRL repetition penalty 1.2 changed 35",
     kSampling,
     "87.6 % of 4-grams repeated over 140 steps (85.5 % over 120); presence 0.5 changed 3 "
     "decisions, frequency 0.5 about 12, repetition 1.2 changed 35"},
    {"C5",
     "the pipeline runs penalties -> temperature -> top-k -> top-p -> renormalise -> draw; at T = "
     "2 applying top-p before rather than after temperature leaves 1 candidate instead of 32,966; "
     "a presence penalty subtracted before dividing by T acts as alpha / T",
     kSampling,
     "penalties -> temperature -> top-k -> top-p -> renormalise -> draw; at T = 2 top-p before "
     "temperature leaves 1 candidate instead of 32,966; a presence penalty before T acts as "
     "alpha / T"},
    {"C6",
     "a fixed seed makes sampling byte-identical from run to run: it fixes the draw, not the "
     "distribution",
     kSampling,
     "a fixed seed makes sampling byte-identical from run to run; it fixes the draw, not the "
     "distribution"},
    // ---- collectives and tensor parallelism
    {"D1",
     "the MPI standard only recommends that a reduction give the same result for the same "
     "arguments in the same order; it does not promise the same result for another number of "
     "processes",
     "MPI standard, MPI_Reduce (\"advice to implementors\"), https://www.mpi-forum.org/docs/",
     "same result recommended for the same arguments and order; none promised across process "
     "counts"},
    {"D2",
     "Open MPI's coll/tuned picks the allreduce algorithm from the communicator size and the "
     "message size; --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm N "
     "pins it (1 basic linear, 2 nonoverlapping, 3 recursive doubling, 4 ring, 5 segmented ring, "
     "6 rabenseifner)",
     "Open MPI 4.1 ompi_info --param coll tuned --level 9; coll/tuned decision rules, "
     "https://github.com/open-mpi/ompi",
     "six pinnable algorithms (1 basic linear .. 6 rabenseifner), chosen by communicator and "
     "message size"},
    {"D3", "\"a 2-rank sum is order independent\"",
     "vLLM tests/.../test_tp_all_reduce_batch_invariant.py (its comment on why the test needs "
     "more than 2 ranks), https://github.com/vllm-project/vllm (the file's path: address not "
     "found)",
     "every algorithm gives the same bits at P = 2"},
    {"D4",
     "tree-based invariant kernels (TBIK): reduce each dot product's K tiles as a fixed binary "
     "tree and all-reduce as the matching tree, and the result is bit-identical across "
     "tensor-parallel sizes; without it TP 4 vs TP 1 moved max probabilities in about 85 % of "
     "cases, with it 0",
     "arXiv 2511.17826 and its repository (issue 7; the repository: address not found)",
     "bit-identical across TP sizes with TBIK; about 85 % of max probabilities moved TP 4 vs TP 1 "
     "without it, 0 with it"},
    {"D5",
     "SGLang's deterministic mode reaches TP 2/4/8 with NCCL_ALGO=allreduce:tree and its custom "
     "all-reduce off: reproducible at a fixed TP size, not across TP sizes",
     "SGLang PR 10930, https://github.com/sgl-project/sglang/pull/10930; TBIK port still an open "
     "PR, https://github.com/sgl-project/sglang/pull/15041",
     "reproducible at a fixed TP size (2/4/8), not across TP sizes"},
    {"D6",
     "an FP8 per-tensor dynamic activation scale is the max over every co-batched token, so a "
     "request's logits change with its batch mates even when no sum is reordered",
     "vLLM issue 57016 / PR 57092, https://github.com/vllm-project/vllm/issues/57016",
     "a request's logits change with its batch mates through the per-tensor scale alone"},
    {"D7", "prefill chunk boundaries change logprob bits (e.g. -1.9073486e-5 vs -1.5258789e-5)",
     "pegainfer PR 688 (address not found); vLLM open issue 46592 (prefix cache, canonical "
     "chunks), https://github.com/vllm-project/vllm/issues/46592",
     "-1.9073486e-5 vs -1.5258789e-5"},
    {"D8",
     "storing weights in 16 bits but computing in float32 (LayerCast) removes most of the "
     "run-to-run variability of bf16 inference; bf16 greedy decoding varied by up to 9 % accuracy "
     "and 9,000 tokens of length across GPU count, batch size and GPU type",
     "arXiv 2506.09501 (\"Give Me FP32 or Give Me Death?\"), vLLM 0.8.2, 12 configurations",
     "LayerCast removes most bf16 variability; bf16 up to 9 % accuracy and 9,000 tokens of "
     "length"},
    // ---- GPU matrix units
    {"G1",
     "NVIDIA tensor cores compute the products exactly, align them to the largest exponent and "
     "truncate (no guard digits), add without normalising in between and round the result toward "
     "zero",
     "Fasi, Higham, Mikaitis and Pranesh, \"Numerical behavior of NVIDIA tensor cores\", PeerJ "
     "Computer Science 7:e330, 2021, https://doi.org/10.7717/peerj-cs.330",
     "exact products; truncation in alignment; round toward zero"},
    {"G2",
     "the fused dot-add differs between GPU architectures (fractional bits of the aligned "
     "products, Ampere's and Ada's split of k, AMD's pairwise and round-down orders), bit for bit "
     "as validated against the hardware",
     "MMA-Sim, arXiv 2511.10909, https://arxiv.org/abs/2511.10909 (microsoft/MMA-Sim, "
     "https://github.com/microsoft/MMA-Sim)",
     "per-architecture arithmetic differs"},
    {"G3",
     "H800 FP8 GEMM accumulation keeps about 14 bits: up to nearly 2 % relative error at K = "
     "4096; promoting partial sums to FP32 every N_C = 128 elements fixes it",
     "DeepSeek-AI, \"DeepSeek-V3 Technical Report\", arXiv 2412.19437, section 3.3.2, "
     "https://arxiv.org/abs/2412.19437",
     "nearly 2 % relative error at K = 4096; fixed by promotion every 128"},
    {"G4",
     "inference is deterministic on one GPU but not invariant across GPU models: the same server "
     "gives other tokens on the next GPU",
     "arXiv 2606.00279, https://arxiv.org/abs/2606.00279",
     "deterministic but not invariant across GPUs"},
    // ---- Mixture of experts (M1-M3 are cited only: docs/claims.md)
    {"M4",
     "in a grouped-GEMM MoE engine each expert multiplies only the tokens routed to it, so the "
     "split of its sums follows the other requests' routing (split-k, library); a last-bit change "
     "in the router's logits can change a token's expert set (a router flip), which replaces a "
     "whole expert's contribution; batch-invariant expert products make neither happen",
     "the lab's own statement (no published figure); docs/claims.md",
     "router flips under batch-dependent policies, each moving its layer's output by more than a "
     "last-bit change; none under batch-invariant"},
    // ---- platforms and compilers
    {"P1",
     "GCC contracts a*b + c into a fused multiply-add by default (-ffp-contract=fast unless an "
     "ISO -std= is given), so the same source gives other bits on a target with FMA (aarch64, "
     "x86-64-v3)",
     "GCC manual, -ffp-contract, https://gcc.gnu.org/onlinedocs/gcc/Optimize-Options.html",
     "q += 0.1 * a[i]: -0x1.54504a6666668p-1 on x86-64, -0x1.54504a6666665p-1 with "
     "-march=x86-64-v3 and on aarch64"},
    {"P2",
     "x87 arithmetic (32-bit x86) evaluates float and double expressions in 80-bit registers "
     "(FLT_EVAL_METHOD 2): results depend on when the compiler spills to memory, and storing "
     "rounds twice",
     "Monniaux, \"The pitfalls of verifying floating-point computations\", TOPLAS 2008, "
     "https://doi.org/10.1145/1353445.1353446",
     "FLT_EVAL_METHOD 2: results depend on spills; storing rounds twice"},
    {"P3",
     "glibc's math functions are not correctly rounded and their errors differ between "
     "architectures",
     "glibc manual, \"Errors in Math Functions\" (per-architecture ulps table), "
     "https://www.gnu.org/software/libc/manual/html_node/Errors-in-Math-Functions.html",
     "not correctly rounded; errors differ between architectures"},
};

}  // namespace

std::span<const Claim> claims_table() { return kClaims; }

const Claim& find_claim(std::string_view id) {
  for (const Claim& c : kClaims) {
    if (c.id == id) return c;
  }
  throw std::logic_error("no claim '" + std::string(id) + "' in lab/claims.cpp");
}

ClaimRef claim_ref(std::string_view id) {
  const Claim& c = find_claim(id);
  return {std::string(c.id), std::string(c.text), std::string(c.source), std::string(c.figure)};
}

}  // namespace fplab
