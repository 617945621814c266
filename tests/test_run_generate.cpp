// sampling::run_generate (sampling/run_generate.hpp) in process: its output
// is what `fplab generate` prints for the same request (plain, --json, the
// gate), and the launcher hands the ranks the request with the steps
// resolved, the model's path spelled out and --logits left here (a stand-in
// GenerateRanks records it). Negative controls: another seed prints another
// text; a request that needs Open MPI without it is refused.
#include <catch2/catch.hpp>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/generate_options.hpp"
#include "cli_runner.hpp"
#include "model/transformer.hpp"
#include "sampling/run_generate.hpp"

namespace {

using fplab::sampling::GenerateRequest;

// Records what the launcher asks; never joins a job.
struct RecordingRanks final : fplab::sampling::GenerateRanks {
  mutable std::vector<GenerateRequest> launched;
  [[nodiscard]] std::unique_ptr<fplab::sampling::GenerateRank> join() const override {
    throw std::logic_error("not a rank");
  }
  [[nodiscard]] std::string launch(const GenerateRequest& ranks, fplab::Collective,
                                   const std::filesystem::path&) const override {
    launched.push_back(ranks);
    return "from the ranks\n";
  }
};

}  // namespace

TEST_CASE("run_generate: in process, what fplab generate prints", "[sampling][cli]") {
  for (const std::string args : {"-t 0 -n 12", "-n 12 --seed 5 --samples 2 --batch 3 --json",
                                 "-t 0 -n 12 --policy split-k --batch 4 --gate window:8"}) {
    INFO(args);
    std::vector<std::string> words;
    for (std::size_t i = 0, j = 0; i <= args.size(); i = j + 1) {
      j = args.find(' ', i);
      if (j == std::string::npos) j = args.size();
      words.push_back(args.substr(i, j - i));
    }
    const GenerateRequest r = fplab::cli::parse_generate_request(words);
    const auto out = fplab::sampling::run_generate(r, nullptr);
    const auto program = fplab::test::run_fplab("generate " + args);
    REQUIRE(program.exit_code == 0);
    // stderr reaches the pipe first: the program's stdout is flushed at exit.
    CHECK(out.err + out.out == program.output);
    GenerateRequest other = r;
    other.seed = r.seed + 1;
    other.prompt = "In the beginning";
    CHECK(fplab::sampling::run_generate(other, nullptr).out != out.out);
  }
}

TEST_CASE("run_generate: the launcher's ranks get the resolved request", "[sampling][tp]") {
  GenerateRequest r;
  r.temperature = 0;
  r.policy = "split-k";
  r.tp = 2;
  r.logits = (std::filesystem::temp_directory_path() / "fplab-run-generate-l.npy").string();
  const RecordingRanks ranks;
  const auto out = fplab::sampling::run_generate(r, &ranks);
  CHECK(out.out == "from the ranks\n");
  REQUIRE(ranks.launched.size() == 1);
  const GenerateRequest& sent = ranks.launched[0];
  CHECK(sent.steps == 200);  // -n left out: as many as the context allows, up to 200
  CHECK(sent.model == fplab::model::model_path().string());
  CHECK(sent.logits.empty());
  CHECK(sent.tp_rank_out.empty());
  GenerateRequest expected = r;
  expected.steps = sent.steps;
  expected.model = sent.model;
  expected.logits.clear();
  CHECK(sent == expected);
  CHECK_THROWS_WITH(fplab::sampling::run_generate(r, nullptr),
                    "--tp: this program has no Open MPI");
}
