# ctest's scheduling costs for each suite's longest tests, as name/seconds
# pairs (tests/CMakeLists.txt sets them as COST). ctest starts the tests of
# a run in descending COST; after a run its Testing/Temporary/
# CTestCostData.txt takes over, but CI's fresh clone has none, and without
# these ctest starts the tests in definition order, so a long test defined
# late (bisect's kinds-first search, the browser tests) runs alone on one
# core at the end. The figures are each test's seconds in the fresh-clone
# `.ci/run` of 3e58d37 (2026-12-07 13:17-14:12 UTC): its release suite at
# load 2 to 8, its sanitizer suite at load about 2 (the changed-route
# remainder case measured again after it was made shorter, 746d25b): a
# ranking, not idle times. Added from stop 56's rehearsal (166765c): the
# MoE stored-experts case, 38 s under the sanitizers, started 465th of 560. A renamed test loses its cost without a word:
# rename it here too.
set(fplab_test_costs_release
    "gated decoding on a Mixture-of-Experts model: routes certified or recomputed" 175
    "fplab run all --quick twice, in two processes: one fingerprint" 146
    "checkpoint_fixtures" 73
    "classroom_page" 69
    "real experiments: the model experiments on Mixtral and Qwen2-MoE" 61
    "real experiments: the audit's cells on Qwen2-MoE" 55
    "real experiments: the audit's cells on Mistral's sliding window" 53
    "bench_smoke" 53
    "real experiments: the remaining model experiments on qwen3moe-bf16" 52
    "exhaustive: float to fp16 (nearest even) equals Eigen::half and F16C, 2^32 floats" 52
    "real experiments: the sampling experiments" 49
    "real experiments: the audit's cells on Mixtral" 48
    "exhaustive: float to bf16 (nearest even) equals Eigen::bfloat16, 2^32 floats" 40
    "ci_workflows" 37
    "the argument finds every table, row, column and figure it reads, in fresh results" 33
    "deb_package" 29
    "collectives mpi: every ompi-* order equals Open MPI bit for bit, P = 2..5" 29
    "first-order bound on checkpoints: the cover bounds the exact rows' sums from above" 29
    "real experiments: op-localisation leaves out TP 1 vs 4" 27
    "gpu-generations --quick: generations differ, each is repeatable" 25
    "real experiments: a checkpoint's texts say token, the bundled model's character" 25
    "bisect: ddmin over op kinds first finds per-op ddmin's set in fewer passes" 25
    "llama_cpp_greedy" 24)
# The sanitizer suite's.
set(fplab_test_costs_sanitized
    "moe: generate --tp on real Open MPI ranks equals the in-process prediction" 69
    "moe: the first-order remainder sample runs through a changed route" 66
    "a 16-bit checkpoint's forward pass reads its stored weights, with the float copy's bits under every policy" 61
    "fplab generate --gate: the invariant text, the counts, one-line errors" 54
    "first-order bound on checkpoints: the cover bounds the exact rows' sums from above" 49
    "real models: fp32 logits within the stated bound of the float64 HF reference" 44
    "cli journey: bisect's op kinds first find --per-op's set on a checkpoint, in fewer passes" 38
    "report_browser" 38
    "real models: every op's GGUF names are the fixture GGUF's tensors" 37
    "the gpu policy reads stored bf16 weights without widening them, with the float copy's bits" 36
    "an MoE checkpoint's bf16 and f16 experts are read as stored, with the float copy's bits" 38
    "first-order bound on checkpoints: the cover's adjoints against finite differences" 33
    "real models: fplab generate --prompt-ids starts from the tokenizer's ids" 30
    "first-order bound through a router: uncertified routes are left out, counted" 29
    "checkpoint_fixtures" 28
    "fplab generate: steps, batch, samples, tp and top-k served or refused in one line" 26
    "cli journey: generate --gate bound paces progress lines and stops on SIGINT" 24)
