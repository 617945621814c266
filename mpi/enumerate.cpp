#include "mpi/enumerate.hpp"

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "mpi/launcher.hpp"

namespace fplab {

namespace {

std::string hex(double x) {
  char text[64];
  std::snprintf(text, sizeof text, "%a", x);
  return text;
}

}  // namespace

void write_mpi_enumerate_output(const std::filesystem::path& path,
                                const std::vector<MpiEnumerateRow>& rows, std::size_t ranks) {
  const auto tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp);
    out << "fplab-mpi-enumerate 1 " << rows.size() << " " << ranks << "\n";
    for (const auto& r : rows) {
      out << "row " << r.strategy << " " << r.dtype << " " << r.bits.size() << "\n";
      char line[64];
      for (const auto& [b, c] : r.bits) {
        std::snprintf(line, sizeof line, "%" PRIx64 " %" PRIu64 "\n", b, c);
        out << line;
      }
      for (std::size_t k = 0; k < ranks; ++k) {
        out << "rank " << k << " " << hex(r.rank_seconds.at(k)) << " "
            << hex(r.rank_cpu_seconds.at(k)) << "\n";
      }
    }
    out << "end\n";
    if (!out) throw MpiError("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

std::vector<MpiEnumerateRow> read_mpi_enumerate_output(const std::filesystem::path& path,
                                                       std::size_t rows, std::size_t ranks) {
  std::ifstream in(path);
  if (!in) throw MpiError("the MPI job wrote no results (" + path.filename().string() + ")");
  const auto bad = [] { return MpiError("the MPI job's enumeration results are truncated"); };
  std::string line;
  const std::string header =
      "fplab-mpi-enumerate 1 " + std::to_string(rows) + " " + std::to_string(ranks);
  if (!std::getline(in, line) || line != header) {
    throw MpiError("the MPI job's enumeration results have an unexpected header");
  }
  std::vector<MpiEnumerateRow> out(rows);
  for (auto& r : out) {
    std::size_t entries = 0;
    std::string word;
    if (!std::getline(in, line)) throw bad();
    std::istringstream head(line);
    if (!(head >> word >> r.strategy >> r.dtype >> entries) || word != "row") throw bad();
    r.bits.resize(entries);
    for (auto& [b, c] : r.bits) {
      if (!std::getline(in, line) ||
          std::sscanf(line.c_str(), "%" SCNx64 " %" SCNu64, &b, &c) != 2) {
        throw bad();
      }
    }
    for (std::size_t k = 0; k < ranks; ++k) {
      std::size_t rank = 0;
      std::string wall, cpu;
      if (!std::getline(in, line)) throw bad();
      std::istringstream t(line);
      if (!(t >> word >> rank >> wall >> cpu) || word != "rank" || rank != k) throw bad();
      r.rank_seconds.push_back(std::strtod(wall.c_str(), nullptr));
      r.rank_cpu_seconds.push_back(std::strtod(cpu.c_str(), nullptr));
    }
  }
  if (!std::getline(in, line) || line != "end" || in.peek() != std::char_traits<char>::eof()) {
    throw bad();
  }
  return out;
}

std::vector<MpiEnumerateRow> mpi_enumerate(const MpiEnumerateRequest& request) {
  if (request.numbers.empty() || request.strategies.empty() || request.dtypes.empty() ||
      request.ranks == 0) {
    throw std::invalid_argument("mpi_enumerate: no numbers, strategies, dtypes or ranks");
  }
  TempDir dir;
  const auto out = dir.path() / "enumeration.txt";
  MpiJob job;
  job.ranks = request.ranks;
  job.timeout_seconds = request.timeout_seconds;
  job.command = {
      mpi_rank_program().string(),    "mpi-enumerate", "--out", out.string(), "--threads",
      std::to_string(request.threads)};
  std::string numbers;
  for (double x : request.numbers) numbers += (numbers.empty() ? "" : ",") + hex(x);
  job.command.insert(job.command.end(), {"--numbers", numbers});
  for (const auto& s : request.strategies) job.command.insert(job.command.end(), {"--strategy", s});
  for (const auto& d : request.dtypes) job.command.insert(job.command.end(), {"--dtype", d});
  if (request.levels >= 0) {
    job.command.insert(job.command.end(), {"--levels", std::to_string(request.levels)});
  }
  if (request.fail_rank >= 0) {
    job.command.insert(job.command.end(), {"--fail-rank", std::to_string(request.fail_rank)});
  }
  run_mpi_job(job);
  return read_mpi_enumerate_output(out, request.strategies.size() * request.dtypes.size(),
                                   request.ranks);
}

}  // namespace fplab
