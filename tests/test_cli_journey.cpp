// A new user's journey through the CLI (issue 47): the threads' wait
// policy, stop requests that keep what was found, progress on a pipe,
// output paths checked before the work, and the small things a user trips
// on: counts, wording, files named for what they are, NaN weights, each
// command's own examples.
#include <signal.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_runner.hpp"

namespace fs = std::filesystem;
using fplab::test::run_fplab;

namespace {

const fs::path kFixtureDir = FPLAB_CHECKPOINT_FIXTURES;

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

fs::path fresh(const std::string& name) {
  const auto dir = fs::temp_directory_path() / "fplab-test-journey" / name;
  fs::remove_all(dir);
  fs::create_directories(dir.parent_path());
  return dir;
}

std::size_t lines(const std::string& s) { return std::count(s.begin(), s.end(), '\n'); }

// A copy of the fixture `name` whose tensor `tensor` has `bytes` written
// over its element `index` (model.safetensors: one file).
fs::path planted(const std::string& name, const std::string& tensor, std::size_t index,
                 const std::vector<unsigned char>& bytes) {
  const fs::path dir = fresh("planted-" + name);
  fs::copy(kFixtureDir / name, dir, fs::copy_options::recursive);
  const fs::path file = dir / "model.safetensors";
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  std::uint64_t header_len = 0;
  f.read(reinterpret_cast<char*>(&header_len), 8);  // little-endian, as the host
  std::string header(header_len, '\0');
  f.read(header.data(), static_cast<std::streamsize>(header_len));
  const auto start =
      nlohmann::json::parse(header).at(tensor).at("data_offsets").at(0).get<std::uint64_t>();
  f.seekp(static_cast<std::streamoff>(8 + header_len + start + index * bytes.size()));
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return dir;
}

}  // namespace

TEST_CASE("cli journey: OpenMP threads wait passively unless the user chose otherwise",
          "[cli][journey]") {
  // fplab --version says what the OpenMP runtime read when the process
  // started (/proc/self/environ: the environment libgomp saw when loaded).
  const auto plain = run_fplab("--version", "-u OMP_WAIT_POLICY -u GOMP_SPINCOUNT");
  INFO(plain.output);
  CHECK(plain.exit_code == 0);
  CHECK(plain.output.find("OpenMP threads wait: OMP_WAIT_POLICY=passive (fplab's default") !=
        std::string::npos);
  // A user's choice is kept, either variable.
  const auto active = run_fplab("--version", "-u GOMP_SPINCOUNT OMP_WAIT_POLICY=active");
  CHECK(active.output.find("OpenMP threads wait: OMP_WAIT_POLICY=active (yours)\n") !=
        std::string::npos);
  const auto spin = run_fplab("--version", "-u OMP_WAIT_POLICY GOMP_SPINCOUNT=1000");
  CHECK(spin.output.find("OpenMP threads wait: GOMP_SPINCOUNT=1000 (yours)\n") !=
        std::string::npos);
  // The re-exec hands on every argument as given (a quoted spec, negative
  // values): the same answer as a process started with the variable set,
  // which is how the test presets start every other test (CMakePresets.json).
  const std::string args = "sum --json -s 'chunked(2,parallel(3),pairwise)' -- -0.1 0.2 -0.3";
  const auto execd = run_fplab(args, "-u OMP_WAIT_POLICY -u GOMP_SPINCOUNT");
  const auto direct = run_fplab(args, "-u GOMP_SPINCOUNT OMP_WAIT_POLICY=passive");
  REQUIRE(execd.exit_code == 0);
  CHECK(execd.output.find("\"chunked(2,parallel(3),pairwise)\"") != std::string::npos);
  CHECK(execd.output == direct.output);
}

TEST_CASE("cli journey: -n 0 is a one-line error, on the bundled model and a checkpoint",
          "[cli][journey]") {
  for (const std::string& model : {std::string(), (kFixtureDir / "qwen2-f16").string()}) {
    const auto r = run_fplab("generate -t 0 -n 0" + (model.empty() ? "" : " --model " + model));
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output ==
          "fplab: error: --steps 0: nothing to generate (leave -n out for as many as the context "
          "allows, up to 200)\n");
  }
}

TEST_CASE("cli journey: negative counts are refused as negative", "[cli][journey]") {
  for (const char* args :
       {"generate -n -1", "generate --batch -2", "generate --samples -1", "generate --tp -1",
        "generate --policy split-k --split-k -4", "bisect --prompt x -n -3", "run -j -1 spacing"}) {
    const auto r = run_fplab(args);
    INFO(args << ": " << r.output);
    CHECK(r.exit_code == 2);
    // cli/numeric_options.hpp's words: "'-1' is not an integer >= 0".
    CHECK(r.output.find("' is not an integer") != std::string::npos);
    CHECK(r.output.find("'-") != std::string::npos);
    CHECK(r.output.find("18446744073709551615") == std::string::npos);
    CHECK(lines(r.output) == 1);
  }
  const auto fine = run_fplab("generate -t 0 -n 1 --batch 1");  // a count itself still parses
  CHECK(fine.exit_code == 0);
}

TEST_CASE("cli journey: the context is counted in tokens of the named model on a checkpoint",
          "[cli][journey]") {
  const fs::path model = kFixtureDir / "qwen2-f16";
  const auto r = run_fplab("generate -t 0 -n 100000 --model " + model.string());
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.rfind("fplab: error: --steps 100000: over the context of ", 0) == 0);
  CHECK(r.output.find(" tokens of " + model.string() + "\n") != std::string::npos);
  // Negative control: the bundled model counts characters.
  const auto bundled = run_fplab("generate -t 0 -n 100000");
  CHECK(bundled.output.find(" characters of ") != std::string::npos);
  const auto help = run_fplab("generate --help");
  CHECK(help.output.find("Tokens to generate") != std::string::npos);
  CHECK(help.output.find("Characters to generate") == std::string::npos);
  CHECK(help.output.find("with the bundled model (") == std::string::npos);
}

TEST_CASE(
    "cli journey: a config.json or a .npy where a model or a dump goes is named for what it is",
    "[cli][journey]") {
  const fs::path config = kFixtureDir / "qwen2-f16" / "config.json";
  for (const std::string& args :
       {"generate -t 0 -n 1 --model " + config.string(), "run batch-variance --quick --out " +
                                                             fresh("config-as-model").string() +
                                                             " --set model=" + config.string()}) {
    const auto r = run_fplab(args);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("not a safetensors file but JSON text (a Hugging Face model is its "
                        "directory, not its config.json)") != std::string::npos);
    CHECK(lines(r.output) == 1);
  }
  // A .npy array given where a model goes (bisect --dumps reads .npy dumps now).
  const fs::path dir = fresh("npy-dumps");
  fs::create_directories(dir);
  std::string npy = "\x93NUMPY\x01";
  npy += '\0';
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }";
  header.resize(64 - 10 - 1, ' ');
  header += '\n';
  npy += static_cast<char>(header.size());
  npy += '\0';
  npy += header + std::string(4, '\0');
  std::ofstream(dir / "a.npy", std::ios::binary) << npy;
  const auto r = run_fplab("generate -t 0 -n 1 --model " + (dir / "a.npy").string());
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("not a safetensors file but a .npy array") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("cli journey: a NaN or an infinite weight names its tensor", "[cli][journey]") {
  // float32 NaN (0x7fc00000, little-endian) as element 5 of the final norm.
  const fs::path nan_model = planted("qwen2-f32", "model.norm.weight", 5, {0x00, 0x00, 0xc0, 0x7f});
  const auto nan = run_fplab("generate -t 0 -n 1 --model " + nan_model.string());
  INFO(nan.output);
  CHECK(nan.exit_code == 2);
  CHECK(nan.output.find(": the weight model.norm.weight holds a NaN (element 5 of ") !=
        std::string::npos);
  // float16 +infinity (0x7c00) in a layer's norm.
  const fs::path inf_model =
      planted("qwen3-f16", "model.layers.0.input_layernorm.weight", 3, {0x00, 0x7c});
  const auto inf = run_fplab("generate -t 0 -n 1 --model " + inf_model.string());
  INFO(inf.output);
  CHECK(inf.exit_code == 2);
  CHECK(inf.output.find(": the weight model.layers.0.input_layernorm.weight holds an infinity "
                        "(element 3 of ") != std::string::npos);
  // Negative control: the unplanted fixture loads and generates.
  CHECK(run_fplab("generate -t 0 -n 1 --model " + (kFixtureDir / "qwen3-f16").string()).exit_code ==
        0);
  fs::remove_all(nan_model);
  fs::remove_all(inf_model);
}

TEST_CASE("cli journey: each subcommand's help shows its own examples", "[cli][journey]") {
  for (const std::string command :
       {"sum", "list", "round", "run", "report", "diff", "summary", "generate", "pack",
        "collective", "ops", "tokenize", "inspect", "bisect", "dot", "mma"}) {
    const auto r = run_fplab(command + " --help");
    INFO(command << ":\n" << r.output);
    CHECK(r.exit_code == 0);
    const auto examples = r.output.find("Examples:\n");
    REQUIRE(examples != std::string::npos);
    CHECK(r.output.find("  fplab " + command + " ", examples) != std::string::npos);
    if (command != "sum") CHECK(r.output.find("fplab sum 0.1 1e20 -1e20") == std::string::npos);
  }
}

TEST_CASE("cli journey: bisect --json says 'not searched' for the searches it skipped",
          "[cli][journey]") {
  const auto r = run_fplab(
      "bisect --prompt 'In the beginning' --b batch=4 -n 2 --json --no-minimal --no-ranking");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.output);
  CHECK(j["minimal_set"] == "not searched");
  CHECK(j["minimal_fix"] == "not searched");
  CHECK(j["ranking"] == "not searched");
  CHECK(j["partial"].is_null());
  const auto text = run_fplab(
      "bisect --prompt 'In the beginning' --b batch=4 -n 2 --no-minimal "
      "--no-ranking");
  CHECK(text.output.find("minimal fix: not searched (--no-minimal)\n") != std::string::npos);
  // Negative control: searched, the set is a list.
  const auto searched =
      run_fplab("bisect --prompt 'In the beginning' --b batch=4 -n 2 --json --no-ranking");
  REQUIRE(searched.exit_code == 0);
  CHECK(nlohmann::json::parse(searched.output)["minimal_set"].is_array());
}

TEST_CASE("cli journey: output paths are checked before the work starts", "[cli][journey]") {
  // The error a write after the generation would give names no folder; this
  // one comes from the check before it (io/atomic_file.hpp).
  const auto logits = run_fplab("generate -t 0 -n 8 --logits /nonexistent/x.npy");
  CHECK(logits.exit_code == 2);
  CHECK(logits.output ==
        "fplab: error: /nonexistent/x.npy: cannot write: no folder /nonexistent\n");
  // A --out under a regular file: refused before any experiment ran (no
  // experiment's line), nothing created.
  const fs::path dir = fresh("out-under-file");
  fs::create_directories(dir);
  std::ofstream(dir / "file") << "x";
  const auto run = run_fplab("run spacing --quick --out " + (dir / "file" / "out").string());
  INFO(run.output);
  CHECK(run.exit_code == 2);
  CHECK(run.output.rfind("fplab: error: cannot write to " + (dir / "file" / "out").string() + ": " +
                             (dir / "file").string() + " is not a folder\n",
                         0) == 0);
  CHECK(lines(run.output) == 1);
  // A --out that does not exist yet is checked and created only for the report.
  const fs::path fine = dir / "new" / "out";
  CHECK(run_fplab("run spacing --quick --out " + fine.string()).exit_code == 0);
  CHECK(fs::exists(fine / "results.json"));
  fs::remove_all(dir);
}

TEST_CASE("cli journey: progress lines reach a stderr that is not a terminal", "[cli][journey]") {
  // $FPLAB_PROGRESS_SECONDS=0: a line at every progress point.
  const auto bisect = run_fplab("bisect --prompt 'In the beginning' --b batch=4 -n 2 --no-minimal",
                                "FPLAB_PROGRESS_SECONDS=0");
  CHECK(bisect.exit_code == 0);
  CHECK(bisect.output.find("fplab: bisect: decoding both settings\n") != std::string::npos);
  CHECK(bisect.output.find("fplab: bisect: ranking each op alone: 1 of ") != std::string::npos);
  const fs::path out = fresh("progress");
  const auto run =
      run_fplab("run spacing --quick --out " + out.string(), "FPLAB_PROGRESS_SECONDS=0");
  CHECK(run.exit_code == 0);
  CHECK(run.output.find("fplab: [1/1] spacing: ") != std::string::npos);
  // Negative control: at the default pace (10 s) a command of a second prints none.
  const auto quiet = run_fplab("bisect --prompt 'In the beginning' --b batch=4 -n 2 --no-minimal",
                               "-u FPLAB_PROGRESS_SECONDS");
  CHECK(quiet.output.find("fplab: bisect: ") == std::string::npos);
  fs::remove_all(out);
}

TEST_CASE("cli journey: SIGINT on bisect prints what it found, marked partial, and exits 130",
          "[cli][journey]") {
  // Signalled once its progress line says the ranking began (the first
  // divergent op is known by then), not after a time a loaded machine may
  // not keep; 41 more ranked ops and ddmin follow, so it is still running.
  const fs::path log = fresh("bisect-sigint.log");
  const pid_t pid = fplab::test::spawn_fplab(
      {"bisect", "--prompt", "In the beginning", "--a", "batch=1", "--b", "batch=8", "-n", "20"},
      log, {"FPLAB_PROGRESS_SECONDS=0"});
  REQUIRE(fplab::test::wait_for_output(pid, log, "fplab: bisect: ranking each op alone: 1 of"));
  REQUIRE(kill(pid, SIGINT) == 0);
  const int status = fplab::test::wait_status(pid, 120.0);
  const std::string output = read_all(log);
  INFO(output);
  REQUIRE(status != -1);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  CHECK(output.find("first divergent op: layers.0.self_attn.v_proj (op 2, layer 0), step 1") !=
        std::string::npos);
  CHECK(output.find("\npartial: stopped by SIGINT during ") != std::string::npos);
  CHECK(output.find("fplab: bisect stopped by SIGINT during ") != std::string::npos);
  fs::remove(log);
}

TEST_CASE("cli journey: a stop request from the first instant is acted on, not a death by signal",
          "[cli][journey]") {
  // SIGTERM sent the moment fplab is started, held pending until its main
  // takes it (spawn_fplab's `held`: what a signal during start-up, the
  // wait policy's re-exec or the parsing becomes): each command that keeps
  // what it found says so and exits 143, before any model is loaded.
  const fs::path out = fresh("first-instant-out");
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"run", "batch-variance", "--quick", "--out", out.string()},
       "fplab: stopped by SIGTERM during the plan: 0 of 0 experiments finished; nothing written, " +
           out.string() + " left as it was\n"},
      {{"bisect", "--prompt", "In the beginning", "--b", "batch=4", "-n", "2"},
       "fplab: bisect stopped by SIGTERM during loading the model; nothing found yet\n"},
      {{"generate", "-t", "0", "-n", "4", "--gate", "bound"},
       "fplab: generate stopped by SIGTERM: nothing written\n"}};
  for (const auto& c : cases) {
    INFO(c.args[0]);
    const fs::path log = fresh("first-instant.log");
    const pid_t pid = fplab::test::spawn_fplab(c.args, log, {}, true);
    REQUIRE(kill(pid, SIGTERM) == 0);
    const int status = fplab::test::wait_status(pid, 60.0);
    const std::string output = read_all(log);
    INFO(output);
    REQUIRE(status != -1);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 128 + SIGTERM);
    CHECK(output == c.message);
    CHECK(!fs::exists(out));
  }
  // Negative control: a command without a stop action still dies of the
  // signal, held or not.
  const fs::path log = fresh("first-instant-sum.log");
  const pid_t pid = fplab::test::spawn_fplab({"sum", "1", "2"}, log, {}, true);
  REQUIRE(kill(pid, SIGTERM) == 0);
  const int status = fplab::test::wait_status(pid, 60.0);
  INFO(read_all(log));
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
}

TEST_CASE("cli journey: generate --gate bound paces progress lines and stops on SIGINT",
          "[cli][journey]") {
  // At every progress point (FPLAB_PROGRESS_SECONDS=0) on a pipe: a line per
  // gated pass.
  const auto paced = run_fplab("generate -t 0 -n 3 --gate bound", "FPLAB_PROGRESS_SECONDS=0");
  INFO(paced.output);
  CHECK(paced.exit_code == 0);
  CHECK(paced.output.find("fplab: generate: 1 of 3 gated tokens\n") != std::string::npos);
  CHECK(paced.output.find("fplab: generate: 3 of 3 gated tokens\n") != std::string::npos);
  // Negative control: at a pace of a day, none. (Not the default 10 s: under
  // the sanitizers on a loaded machine this command takes longer than that.)
  const auto quiet = run_fplab("generate -t 0 -n 3 --gate bound", "FPLAB_PROGRESS_SECONDS=86400");
  CHECK(quiet.exit_code == 0);
  CHECK(quiet.output.find("gated tokens") == std::string::npos);
  // SIGINT once a line says it is under way: exit 130, nothing written.
  const fs::path log = fresh("gate-sigint.log");
  const pid_t pid = fplab::test::spawn_fplab(
      {"generate", "-t", "0", "-n", "200", "--gate", "bound", "--batch", "4"}, log,
      {"FPLAB_PROGRESS_SECONDS=0"});
  REQUIRE(fplab::test::wait_for_output(pid, log, "fplab: generate: 4 of 800 gated tokens"));
  REQUIRE(kill(pid, SIGINT) == 0);
  const int status = fplab::test::wait_status(pid, 60.0);
  const std::string output = read_all(log);
  INFO(output);
  REQUIRE(status != -1);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  CHECK(output.find("fplab: generate stopped by SIGINT: nothing written\n") != std::string::npos);
}

TEST_CASE("cli journey: the bound experiments print their bounds' progress on a pipe",
          "[cli][journey][slow]") {
  // slow: the two experiments' --quick runs, about 20 s each at load 20.
  for (const std::string id : {"certified-tokens", "gated-determinism"}) {
    const fs::path out = fresh("bounds-progress-" + id);
    const auto run =
        run_fplab("run " + id + " --quick --out " + out.string(), "FPLAB_PROGRESS_SECONDS=0");
    INFO(run.output);
    CHECK(run.exit_code == 0);
    CHECK(run.output.find("fplab: " + id + ": bounds ") != std::string::npos);
    fs::remove_all(out);
  }
}

TEST_CASE(
    "cli journey: bisect's op kinds first find --per-op's set on a checkpoint, in fewer passes",
    "[cli][journey]") {
  // bisect's default without a ranking (ddmin over op kinds, then per op)
  // against --per-op (ddmin from every op) on a checkpoint fixture.
  const std::string cmd = "bisect --model " + (kFixtureDir / "llama3-bf16").string() +
                          " --prompt 'In the beginning' --b batch=4 -n 2 --json --no-ranking";
  const auto kinds = run_fplab(cmd);
  const auto plain = run_fplab(cmd + " --per-op");
  INFO(kinds.output);
  INFO(plain.output);
  REQUIRE(kinds.exit_code == 0);
  REQUIRE(plain.exit_code == 0);
  const auto k = nlohmann::json::parse(kinds.output);
  const auto p = nlohmann::json::parse(plain.output);
  CHECK(k["minimal_fix"]["search"] == "kinds first");
  CHECK(p["minimal_fix"]["search"] == "per op");
  CHECK(p["minimal_fix"]["kinds"].is_null());
  REQUIRE(k["minimal_set"].is_array());
  CHECK_FALSE(k["minimal_set"].empty());
  CHECK(k["minimal_set"] == p["minimal_set"]);
  for (const auto* j : {&k, &p}) {
    CHECK((*j)["minimal_fix"]["confirmed"] == true);
    CHECK((*j)["minimal_fix"]["one_minimal"] == true);
  }
  CHECK(k["minimal_fix"]["kinds"].is_array());
  CHECK(k["minimal_fix"]["kind_tests"].get<int>() > 0);
  CHECK(k["minimal_fix"]["forward_passes"].get<int>() <
        p["minimal_fix"]["forward_passes"].get<int>());
  CHECK(k["minimal_fix"]["tests"].get<int>() < p["minimal_fix"]["tests"].get<int>());
}
