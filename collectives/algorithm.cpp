#include "collectives/algorithm.hpp"

#include <array>
#include <stdexcept>

namespace fplab {

namespace {

struct Entry {
  Collective algorithm;
  std::string_view name;
  int ompi_number;
  std::string_view description;
};

constexpr std::array<Entry, 11> kEntries{{
    {Collective::ompi_linear, "ompi-linear", 1,
     "Open MPI 4.1.4 allreduce 1: linear reduce to rank 0 from rank P-1 down, then bcast"},
    {Collective::ompi_nonoverlapping, "ompi-nonoverlapping", 2,
     "Open MPI 4.1.4 allreduce 2: coll/tuned's reduce (its fixed rules: chain, binary or "
     "binomial tree) to rank 0, then bcast"},
    {Collective::ompi_recursive_doubling, "ompi-recursive-doubling", 3,
     "Open MPI 4.1.4 allreduce 3: pairs folded first, then a butterfly over 2^k ranks"},
    {Collective::ompi_ring, "ompi-ring", 4,
     "Open MPI 4.1.4 allreduce 4: P blocks, block b summed along the ring from rank b "
     "(recursive doubling when m < P)"},
    {Collective::ompi_segmented_ring, "ompi-segmented-ring", 5,
     "Open MPI 4.1.4 allreduce 5 at its default segment size (0: the ring itself)"},
    {Collective::ompi_rabenseifner, "ompi-rabenseifner", 6,
     "Open MPI 4.1.4 allreduce 6: reduce-scatter by recursive halving + allgather "
     "(linear when m < 2^floor(log2 P))"},
    {Collective::ompi_default, "ompi-default", 0,
     "what Open MPI 4.1.4's fixed decision rules choose for this P, m and datatype"},
    {Collective::nccl_ring, "nccl-ring", -1,
     "NCCL ring all-reduce, one channel: chunk c summed along the ring from rank c+1 "
     "(an order model; no GPU here)"},
    {Collective::nccl_tree, "nccl-tree", -1,
     "NCCL tree all-reduce, one channel, tree 0 of ncclGetBtree: own value, then "
     "children (an order model; no GPU here)"},
    {Collective::tree, "tree", -1,
     "balanced binary tree over the ranks (split at floor(P/2)), the same shape for every "
     "power-of-two P"},
    {Collective::exact, "exact", -1, "correctly rounded sum of the P contributions, any P"},
}};

constexpr std::array<CollectiveInfo, 11> kCatalogue = [] {
  std::array<CollectiveInfo, 11> out{};
  for (std::size_t i = 0; i < kEntries.size(); ++i) {
    out[i] = {kEntries[i].algorithm, kEntries[i].description};
  }
  return out;
}();

const Entry& entry(Collective c) {
  for (const auto& e : kEntries) {
    if (e.algorithm == c) return e;
  }
  throw std::logic_error("unknown Collective");
}

}  // namespace

std::string_view name(Collective c) { return entry(c).name; }

std::string collective_names() {
  std::string out;
  for (const auto& e : kEntries) {
    if (!out.empty()) out += ", ";
    out += e.name;
  }
  return out;
}

Collective parse_collective(std::string_view spelling) {
  for (const auto& e : kEntries) {
    if (e.name == spelling) return e.algorithm;
  }
  throw std::invalid_argument("unknown collective algorithm '" + std::string(spelling) +
                              "' (one of " + collective_names() + ")");
}

std::span<const CollectiveInfo> collective_catalogue() { return kCatalogue; }

int ompi_algorithm_number(Collective c) { return entry(c).ompi_number; }

// The commutative branch of ompi_coll_tuned_allreduce_intra_dec_fixed
// (Open MPI v4.1.4, ompi/mca/coll/tuned/coll_tuned_decision_fixed.c),
// thresholds on total_dsize = type size * count, transcribed in order.
int ompi_default_allreduce_algorithm(std::size_t ranks, std::size_t count, std::size_t type_size) {
  const std::size_t s = type_size * count;
  const std::size_t p = ranks;
  if (p < 4) {
    if (s < 8) return 4;
    if (s < 4096) return 3;
    if (s < 8192) return 4;
    if (s < 16384) return 3;
    if (s < 65536) return 4;
    if (s < 262144) return 5;
    return 6;
  }
  if (p < 8) {
    if (s < 16) return 4;
    if (s < 8192) return 3;
    return 6;
  }
  if (p < 16) return s < 8192 ? 3 : 6;
  if (p < 32) {
    if (s < 64) return 5;
    if (s < 4096) return 3;
    return 6;
  }
  if (p < 64) return s < 128 ? 5 : 6;
  if (p < 128) return s < 262144 ? 3 : 6;
  if (p < 256) {
    if (s < 131072) return 2;
    if (s < 262144) return 3;
    return 6;
  }
  if (p < 512) return s < 4096 ? 2 : 6;
  if (p < 2048) {
    if (s < 2048) return 2;
    if (s < 16384) return 3;
    return 6;
  }
  if (p < 4096) {
    if (s < 2048) return 2;
    if (s < 4096) return 5;
    if (s < 16384) return 3;
    return 6;
  }
  if (s < 2048) return 2;
  if (s < 16384) return 5;
  if (s < 32768) return 3;
  return 6;
}

// The commutative branch of ompi_coll_tuned_reduce_intra_dec_fixed (same
// file), up to 64 ranks (kMaxCollectiveRanks).
int ompi_default_reduce_algorithm(std::size_t ranks, std::size_t count, std::size_t type_size) {
  const std::size_t s = type_size * count;
  const std::size_t p = ranks;
  if (p < 4) {
    if (s < 8) return 7;
    if (s < 16) return 4;
    if (s < 32) return 3;
    if (s < 262144) return 1;
    if (s < 524288) return 3;
    if (s < 1048576) return 2;
    return 3;
  }
  if (p < 8) {
    if (s < 4096) return 4;
    if (s < 65536) return 2;
    if (s < 262144) return 5;
    if (s < 524288) return 1;
    if (s < 1048576) return 5;
    return 1;
  }
  if (p < 16) return s < 8192 ? 4 : 5;
  if (p < 32) return s < 4096 ? 4 : 5;
  if (p < 256) return 5;
  throw std::invalid_argument("ompi-nonoverlapping: more than 255 ranks not modelled");
}

}  // namespace fplab
