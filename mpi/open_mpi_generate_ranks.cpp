#include "mpi/open_mpi_generate_ranks.hpp"

#include <fstream>
#include <iterator>
#include <utility>
#include <vector>

#include "mpi/launcher.hpp"
#include "mpi/tp_rank.hpp"

namespace fplab {

namespace {

class GenerateMpiRank final : public sampling::GenerateRank {
 public:
  [[nodiscard]] std::size_t rank() const override { return mpi_.rank(); }
  [[nodiscard]] std::size_t size() const override { return mpi_.size(); }
  void die_at_call(std::size_t call) override { mpi_.die_at_call(call); }
  [[noreturn]] void abort(const std::string& why) const override { mpi_.abort(why); }
  void allreduce(std::span<const float> partial, std::span<float> out, Collective order) override {
    mpi_.allreduce(partial, out, order);
  }

 private:
  MpiTpRank mpi_;
};

std::string read_rank_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw MpiError("the MPI job wrote no results (" + path.filename().string() + ")");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

std::unique_ptr<sampling::GenerateRank> OpenMpiGenerateRanks::join() const {
  return std::make_unique<GenerateMpiRank>();
}

std::string OpenMpiGenerateRanks::launch(const sampling::GenerateRequest& ranks, Collective order,
                                         const std::filesystem::path& logits) const {
  TempDir dir;
  sampling::GenerateRequest r = ranks;
  r.tp_rank_out = dir.path().string();
  MpiJob job;
  job.ranks = r.tp;
  job.mca = tp_mpirun_mca(order);
  job.timeout_seconds = r.timeout;
  job.command = {mpi_rank_program().string(), "generate"};
  for (auto& a : r.to_args()) job.command.push_back(std::move(a));
  run_mpi_job(job);
  std::string text = read_rank_text(dir.path() / sampling::kRankText);
  if (!logits.empty()) {
    const std::filesystem::path tmp = logits.string() + ".tmp";
    std::filesystem::copy_file(dir.path() / sampling::kRankLogits, tmp,
                               std::filesystem::copy_options::overwrite_existing);
    std::filesystem::rename(tmp, logits);
  }
  return text;
}

}  // namespace fplab
