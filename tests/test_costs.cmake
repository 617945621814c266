# ctest's scheduling costs for each suite's longest tests, as name/seconds
# pairs (tests/CMakeLists.txt sets them as COST). ctest starts the tests of
# a run in descending COST; after a run its Testing/Temporary/
# CTestCostData.txt takes over, but CI's fresh clone has none, and without
# these ctest starts the tests in definition order, so a long test defined
# late (bisect's kinds-first search, the browser tests) runs alone on one
# core at the end. The figures are each test's seconds in one `ctest
# --preset release` and one `ctest --preset asan` of 660a7b5 on the shared
# 2-core machine at load 15 to 35: a ranking, not idle times (600: the
# test reached the preset's 600 s limit there). A renamed test loses its
# cost without a word: rename it here too.
set(fplab_test_costs_release
    "fplab run all --quick twice, in two processes: one fingerprint" 600
    "gated decoding on a Mixture-of-Experts model: routes certified or recomputed" 600
    "the argument finds every table, row, column and figure it reads, in fresh results" 392
    "exhaustive: float to fp16 (nearest even) equals Eigen::half and F16C, 2^32 floats" 275
    "gpu-generations --quick: generations differ, each is repeatable" 262
    "exhaustive: float to bf16 (nearest even) equals Eigen::bfloat16, 2^32 floats" 238
    "bisect: ddmin over op kinds first finds per-op ddmin's set in fewer passes" 235
    "gated decoding equals always-invariant decoding at every batch size" 208
    "ci_workflows" 191
    "batch-answers: the earliest divergence is the brute-force minimum over every batch" 169
    "deb_package" 150
    "classroom_page" 150
    "fplab generate --gate: the invariant text, the counts, one-line errors" 136
    "report_browser" 98
    "bisect_engine_dumps" 80
    "fplab sum: every strategy count is served or refused in one line" 77
    "ci_recipe" 76
    "example_drift_kernel" 61
    "first-order bound through a router: uncertified routes are left out, counted" 61
    "fplab generate: steps, batch, samples, tp and top-k served or refused in one line" 60)
# The sanitizer suite's, from its first 196 tests (the run was stopped
# there; the exact and CLI tests come first in definition order).
set(fplab_test_costs_sanitized
    "tensor parallel: T = 1 gives every policy the bits of the plain forward pass" 207
    "fplab generate --prompt-ids: the text prompt's ids give the same answer" 188
    "seeded-sampling: reruns agree, bf16 moves the distribution" 186
    "tensor parallel: tp-invariant logits are identical for T = 1, 2, 4 and batches 1..8" 161
    "The sampling experiments give a verdict on every C-claim" 104
    "every teaching command has --narrow, and takes it by itself below 100 columns" 87
    "fplab sum: bad input is a one-line error and a non-zero exit" 87
    "fplab generate --split-k: the split count flips a bf16 token" 78
    "run_generate: in process, what fplab generate prints" 73
    "fplab sum: negative numbers are values without --" 72)
