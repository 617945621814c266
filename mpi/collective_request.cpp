#include "mpi/collective_request.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <span>
#include <variant>

#include "collectives/algorithm.hpp"
#include "collectives/allreduce_model.hpp"
#include "collectives/npy_matrix.hpp"
#include "io/input_error.hpp"
#include "io/numbers.hpp"
#include "io/sha256.hpp"
#include "mpi/allreduce.hpp"
#include "reductions/error.hpp"

namespace fplab {

std::vector<std::string> CollectiveRequest::to_args() const {
  std::vector<std::string> args{"--algorithm=" + algorithm, "--ranks=" + std::to_string(ranks),
                                "--file=" + file, "--timeout=" + to_decimal(timeout)};
  if (json) args.emplace_back("--json");
  if (mpi) args.emplace_back("--mpi");
  return args;
}

namespace {

template <class T>
bool same_bits(T x, T y) {
  return std::bit_cast<std::array<unsigned char, sizeof(T)>>(x) ==
         std::bit_cast<std::array<unsigned char, sizeof(T)>>(y);
}

template <class T>
bool same_bits(std::span<const T> a, std::span<const T> b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](T x, T y) { return same_bits(x, y); });
}

template <class T>
void with_mpi(const CollectiveRequest& r, Collective c, const Matrix<T>& data,
              const std::vector<T>& model, CollectiveResult& out) {
  const MpiReduction reduction = mpi_reduction_for(c);
  MpiRunOptions options;
  options.timeout_seconds = r.timeout;
  const MpiAllreduceOutput<T> mpi =
      mpi_allreduce<T>(data, std::span<const MpiReduction>(&reduction, 1), options);
  out.mpi_reduction = reduction.spelling();
  out.agree = true;
  for (std::size_t rank = 0; rank < data.rows; ++rank) {
    if (!same_bits<T>(mpi.at(0, rank), model)) out.agree = false;
    if (!same_bits<T>(mpi.at(0, rank), mpi.at(0, 0)))
      out.mpi_ranks_differing_from_rank0.push_back(rank);
  }
  for (T x : mpi.at(0, 0)) out.mpi_hex.push_back(to_hex(x));
}

template <class T>
CollectiveResult result_of(const CollectiveRequest& r, Collective c, const Matrix<T>& data) {
  const std::size_t p = data.rows, m = data.cols;
  const std::vector<T> model = allreduce_model<T>(c, data.values, p);
  const std::vector<T> exact = allreduce_model<T>(Collective::exact, data.values, p);
  CollectiveResult out;
  out.algorithm = std::string(name(c));
  out.resolved = resolved_algorithm(c, p, m, sizeof(T));
  out.ranks = p;
  out.m = m;
  out.dtype = sizeof(T) == 4 ? "float32" : "float64";
  out.element_bytes = sizeof(T);
  for (std::size_t j = 0; j < m; ++j) {
    if (!same_bits(model[j], exact[j])) ++out.differ_from_exact;
    const std::uint64_t ulps = ulp_distance(model[j], exact[j]);
    out.max_ulps_from_exact = std::max(out.max_ulps_from_exact, ulps);
    out.hex.push_back(to_hex(model[j]));
    out.decimal.push_back(to_decimal(model[j]));
    const bool equal = model[j] == exact[j] && std::signbit(model[j]) == std::signbit(exact[j]);
    out.ulps_from_exact.push_back(equal ? std::nullopt : std::optional<std::uint64_t>(ulps));
  }
  out.sha256 = sha256_hex(std::as_bytes(std::span<const T>(model)));
  if (r.mpi) with_mpi(r, c, data, model, out);
  return out;
}

}  // namespace

CollectiveResult run_collective(const CollectiveRequest& r) {
  const Collective c = parse_collective(r.algorithm);
  if (r.ranks < 1 || r.ranks > static_cast<std::int64_t>(kMaxCollectiveRanks)) {
    throw InputError(fmt::format("--ranks {}: outside 1..{}", r.ranks, kMaxCollectiveRanks));
  }
  const NumberMatrix data = read_npy_matrix(r.file);
  return std::visit(
      [&](const auto& d) {
        if (d.rows != static_cast<std::size_t>(r.ranks)) {
          throw InputError(fmt::format("{}: {} rows, but --ranks is {} (row r is rank r's data)",
                                       r.file, d.rows, r.ranks));
        }
        if (d.cols == 0) throw InputError(r.file + ": m = 0 (no values per rank)");
        return result_of(r, c, d);
      },
      data);
}

}  // namespace fplab
