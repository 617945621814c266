// llama.cpp's side of tools/bench_vs_llama_cpp.py: node-llama-cpp 3.22.1's
// prebuilt CPU llama.cpp (tools/package.json) on one GGUF, an F32 KV cache,
// flash attention off (fplab's attention is not a fused kernel either).
// Prints one JSON object on stdout.
//
//   tools/node_modules/.bin/node tools/llama_cpp_decode.mjs greedy MODEL.gguf PROMPTS STEPS THREADS
//       {"ids": [[...], ...]}: per prompt of PROMPTS (ids comma-separated,
//       prompts separated by ';'), STEPS greedy (temperature 0) ids after
//       it, an end-of-generation token included, each from an empty cache.
//   tools/node_modules/.bin/node tools/llama_cpp_decode.mjs speed MODEL.gguf THREADS MIN_SECONDS
//       {"prefill": tokens/s, "decode": tokens/s, "prefill_cpu": ..., "decode_cpu": ...}:
//       prefill of 128 tokens into an empty sequence (one untimed pass first),
//       and single greedy steps after a 16-token prompt, each repeated for at
//       least MIN_SECONDS; the prompts are fplab_bench's (ids (7 i + 1) mod
//       vocab). CPU seconds: the whole process's, every thread.
import { getLlama, LlamaLogLevel } from "node-llama-cpp";

const PREFILL = 128;
const DECODE_PROMPT = 16;

function ids(n, vocab) {
  return Array.from({ length: n }, (_, i) => (7 * i + 1) % vocab);
}

function cpuSeconds() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

async function open(modelPath, threads, contextSize) {
  const llama = await getLlama({ gpu: false, build: "never", maxThreads: threads,
                                 logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath, gpuLayers: 0, useMmap: true });
  const context = await model.createContext({
    contextSize, batchSize: PREFILL, threads: { ideal: threads, min: threads },
    flashAttention: false,
    experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32",
  });
  return { llama, model, context, sequence: context.getSequence() };
}

async function greedy(modelPath, prompts, steps, threads) {
  const { context, sequence } = await open(modelPath, threads, 256);
  const all = [];
  for (const promptIds of prompts) {
    await sequence.clearHistory();
    const out = [];
    const it = sequence.evaluate(promptIds, { temperature: 0, yieldEogToken: true });
    for (let i = 0; i < steps; ++i) {
      const r = await it.next();
      if (r.done) break;
      out.push(r.value);
    }
    await it.return();
    all.push(out);
  }
  await context.dispose();
  return { ids: all };
}

async function speed(modelPath, threads, minSeconds) {
  const { model, context, sequence } = await open(modelPath, threads, 1024);
  const vocab = model.fileInfo.metadata[model.fileInfo.metadata.general.architecture].vocab_size ??
                model.tokens.size ?? 32000;
  const prefill = ids(PREFILL, vocab);
  await sequence.evaluateWithoutGeneratingNewTokens(prefill);  // untimed
  let n = 0;
  let t0 = performance.now(), c0 = cpuSeconds();
  let busy = 0, cpu = 0;
  while (busy < minSeconds * 1000) {
    await sequence.clearHistory();
    const t = performance.now(), c = cpuSeconds();
    await sequence.evaluateWithoutGeneratingNewTokens(prefill);
    busy += performance.now() - t;
    cpu += cpuSeconds() - c;
    ++n;
  }
  const result = { prefill: (n * PREFILL) / (busy / 1000), prefill_cpu: (n * PREFILL) / cpu };

  const prompt = ids(DECODE_PROMPT, vocab);
  n = 0;
  busy = 0;
  cpu = 0;
  while (busy < minSeconds * 1000) {
    await sequence.clearHistory();
    const it = sequence.evaluate(prompt, { temperature: 0, yieldEogToken: true });
    await it.next();  // the prompt's pass: not a decode step
    for (let s = 0; s < 64 && busy < minSeconds * 1000; ++s) {
      t0 = performance.now();
      c0 = cpuSeconds();
      await it.next();
      busy += performance.now() - t0;
      cpu += cpuSeconds() - c0;
      ++n;
    }
    await it.return();
  }
  result.decode = n / (busy / 1000);
  result.decode_cpu = n / cpu;
  await context.dispose();
  return result;
}

const [mode, modelPath, ...rest] = process.argv.slice(2);
let result;
if (mode === "greedy") {
  const [idsText, steps, threads] = rest;
  const prompts = idsText.split(";").map((p) => p.split(",").map(Number));
  result = await greedy(modelPath, prompts, Number(steps), Number(threads));
} else if (mode === "speed") {
  const [threads, minSeconds] = rest;
  result = await speed(modelPath, Number(threads), Number(minSeconds));
} else {
  console.error("usage: llama_cpp_decode.mjs greedy MODEL IDS STEPS THREADS | speed MODEL THREADS MIN_SECONDS");
  process.exit(2);
}
process.stdout.write(JSON.stringify(result) + "\n");
process.exit(0);
