#include "mpi/allreduce.hpp"

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace fplab {

std::string MpiReduction::spelling() const {
  return std::string(exact_op ? "exact:" : "sum:") + std::to_string(algorithm);
}

MpiReduction MpiReduction::parse(std::string_view text) {
  MpiReduction r;
  const auto colon = text.find(':');
  const std::string_view op = text.substr(0, colon);
  if (colon == std::string_view::npos || (op != "sum" && op != "exact")) {
    throw std::invalid_argument("reduction '" + std::string(text) + "': expected sum:N or exact:N");
  }
  r.exact_op = op == "exact";
  const std::string_view n = text.substr(colon + 1);
  const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), r.algorithm);
  if (ec != std::errc() || end != n.data() + n.size() || r.algorithm < 0 || r.algorithm > 6) {
    throw std::invalid_argument("reduction '" + std::string(text) + "': algorithm 0..6");
  }
  return r;
}

MpiReduction mpi_reduction_for(Collective c) {
  if (c == Collective::exact) return {true, 0};
  const int n = ompi_algorithm_number(c);
  if (n < 0) {
    throw MpiError(std::string(name(c)) +
                   " has no Open MPI counterpart (--mpi runs ompi-* and exact)");
  }
  return {false, n};
}

std::string mpi_output_header(std::string_view dtype, std::size_t ranks, std::size_t m,
                              std::size_t reductions) {
  return "fplab-mpi-allreduce 1 " + std::string(dtype) + " " + std::to_string(ranks) + " " +
         std::to_string(m) + " " + std::to_string(reductions) + "\n";
}

template <class T>
MpiAllreduceOutput<T> read_mpi_output(const std::filesystem::path& path, std::size_t ranks,
                                      std::size_t m, std::span<const MpiReduction> reductions) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw MpiError("the MPI job wrote no results (" + path.filename().string() + ")");
  const std::string expected =
      mpi_output_header(sizeof(T) == 4 ? "f32" : "f64", ranks, m, reductions.size());
  std::string header(expected.size(), '\0');
  in.read(header.data(), static_cast<std::streamsize>(header.size()));
  if (header != expected) throw MpiError("the MPI job's results have an unexpected header");
  MpiAllreduceOutput<T> out{ranks, m, {reductions.begin(), reductions.end()}, {}, {}};
  out.values.resize(reductions.size() * ranks * m);
  const auto bytes = static_cast<std::streamsize>(out.values.size() * sizeof(T));
  in.read(reinterpret_cast<char*>(out.values.data()), bytes);
  std::string trailer(4, '\0');
  in.read(trailer.data(), 4);
  if (in.gcount() != 4 || trailer != "end\n" || in.peek() != std::char_traits<char>::eof()) {
    throw MpiError("the MPI job's results are truncated");
  }
  return out;
}

std::filesystem::path mpi_output_path(const std::filesystem::path& prefix, std::size_t k) {
  return prefix.string() + "." + std::to_string(k) + ".bin";
}

std::filesystem::path mpi_times_path(const std::filesystem::path& prefix, std::size_t k) {
  return prefix.string() + "." + std::to_string(k) + ".times";
}

namespace {

std::vector<double> read_mpi_times(const std::filesystem::path& path, std::size_t reductions) {
  std::ifstream in(path);
  if (!in) throw MpiError("the MPI job wrote no timings (" + path.filename().string() + ")");
  std::vector<double> seconds;
  std::string line;
  while (std::getline(in, line)) {
    char* end = nullptr;
    const double s = std::strtod(line.c_str(), &end);
    if (end == line.c_str() || *end != '\0' || !(s >= 0)) {
      throw MpiError("the MPI job's timings are damaged (" + path.filename().string() + ")");
    }
    seconds.push_back(s);
  }
  if (seconds.size() != reductions) {
    throw MpiError("the MPI job's timings are truncated (" + path.filename().string() + ")");
  }
  return seconds;
}

}  // namespace

std::vector<MpiOutput> mpi_allreduce_many(std::span<const NumberMatrix> inputs,
                                          std::span<const MpiReduction> reductions,
                                          const MpiRunOptions& options) {
  if (reductions.empty() || inputs.empty()) {
    throw std::invalid_argument("mpi_allreduce: no reductions or no inputs");
  }
  const auto rows = [](const NumberMatrix& m) {
    return std::visit([](const auto& x) { return x.rows; }, m);
  };
  TempDir dir;
  std::string files;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    if (rows(inputs[k]) != rows(inputs[0])) {
      throw std::invalid_argument("mpi_allreduce: inputs with different row counts");
    }
    const auto path = dir.path() / ("input." + std::to_string(k) + ".npy");
    std::visit(
        [&](const auto& m) {
          write_npy_matrix<typename std::decay_t<decltype(m.values)>::value_type>(path, m.rows,
                                                                                  m.cols, m.values);
        },
        inputs[k]);
    files += (files.empty() ? "" : ",") + path.string();
  }
  const auto prefix = dir.path() / "output";
  MpiJob job;
  job.ranks = options.split_over_ranks != 0 ? options.split_over_ranks : rows(inputs[0]);
  job.timeout_seconds = options.timeout_seconds;
  job.mca.emplace_back("coll_tuned_use_dynamic_rules", "1");
  if (reductions.size() == 1 && reductions[0].algorithm > 0) {
    job.mca.emplace_back("coll_tuned_allreduce_algorithm", std::to_string(reductions[0].algorithm));
  }
  std::string list;
  for (const auto& r : reductions) list += (list.empty() ? "" : ",") + r.spelling();
  job.command = {mpi_rank_program().string(),
                 "mpi-allreduce",
                 "--file",
                 files,
                 "--reductions",
                 list,
                 "--out",
                 prefix.string()};
  if (options.split_over_ranks != 0) job.command.emplace_back("--split-rows");
  if (options.time_repeats > 0) {
    job.command.insert(job.command.end(), {"--time-repeats", std::to_string(options.time_repeats)});
  }
  if (options.hang_rank >= 0) {
    job.command.insert(job.command.end(), {"--hang-rank", std::to_string(options.hang_rank),
                                           "--pid-file", options.pid_file.string()});
  }
  run_mpi_job(job);
  std::vector<MpiOutput> out;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    std::visit(
        [&](const auto& m) {
          using T = typename std::decay_t<decltype(m.values)>::value_type;
          auto result =
              read_mpi_output<T>(mpi_output_path(prefix, k), job.ranks, m.cols, reductions);
          if (options.time_repeats > 0) {
            result.seconds_per_call = read_mpi_times(mpi_times_path(prefix, k), reductions.size());
          }
          out.emplace_back(std::move(result));
        },
        inputs[k]);
  }
  return out;
}

template <class T>
MpiAllreduceOutput<T> mpi_allreduce(const Matrix<T>& data, std::span<const MpiReduction> reductions,
                                    const MpiRunOptions& options) {
  const NumberMatrix input = data;
  auto out = mpi_allreduce_many(std::span<const NumberMatrix>(&input, 1), reductions, options);
  return std::get<MpiAllreduceOutput<T>>(std::move(out.front()));
}

template MpiAllreduceOutput<float> mpi_allreduce(const Matrix<float>&,
                                                 std::span<const MpiReduction>,
                                                 const MpiRunOptions&);
template MpiAllreduceOutput<double> mpi_allreduce(const Matrix<double>&,
                                                  std::span<const MpiReduction>,
                                                  const MpiRunOptions&);
template MpiAllreduceOutput<float> read_mpi_output(const std::filesystem::path&, std::size_t,
                                                   std::size_t, std::span<const MpiReduction>);
template MpiAllreduceOutput<double> read_mpi_output(const std::filesystem::path&, std::size_t,
                                                    std::size_t, std::span<const MpiReduction>);

}  // namespace fplab
