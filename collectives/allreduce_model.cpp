#include "collectives/allreduce_model.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include "reductions/exact.hpp"

namespace fplab {

namespace {

// One element's association, written once for any value type V with `+`:
// the model (V = float or double) and its text (V = Expr) are the same code.
struct Expr {
  std::string text;
  bool leaf = true;
  friend Expr operator+(const Expr& a, const Expr& b) {
    const auto wrap = [](const Expr& e) { return e.leaf ? e.text : "(" + e.text + ")"; };
    return {wrap(a) + " + " + wrap(b), false};
  }
};

std::size_t floor_pow2(std::size_t p) {
  std::size_t q = 1;
  while (q * 2 <= p) q *= 2;
  return q;
}

// A reduction tree as ompi_coll_base_reduce_generic walks it (one segment,
// commutative op, not in place): ((child_0 + own) + child_1) + ...
template <class V, class X, class Children>
V reduce_tree(std::size_t node, const X& x, const Children& children) {
  const std::vector<std::size_t> kids = children(node);
  if (kids.empty()) return x(node);
  V acc = reduce_tree<V>(kids[0], x, children) + x(node);
  for (std::size_t i = 1; i < kids.size(); ++i) acc = acc + reduce_tree<V>(kids[i], x, children);
  return acc;
}

// ompi_coll_base_topo_build_tree(fanout 2, root 0): node r at level l
// (levels hold 1, 2, 4 ... nodes) has children r + 2^l and r + 2 * 2^l.
std::vector<std::size_t> binary_children(std::size_t r, std::size_t p) {
  std::size_t level_start = 0, width = 1;
  while (level_start + width <= r) {
    level_start += width;
    width *= 2;
  }
  std::vector<std::size_t> out;
  for (std::size_t i = 1; i <= 2 && r + width * i < p; ++i) out.push_back(r + width * i);
  return out;
}

// ompi_coll_base_topo_build_in_order_bmtree(root 0): r's children are
// r ^ mask for increasing masks, until r ^ mask < r (that one is the parent).
std::vector<std::size_t> binomial_children(std::size_t r, std::size_t p) {
  std::vector<std::size_t> out;
  for (std::size_t mask = 1; mask < p; mask <<= 1) {
    const std::size_t remote = r ^ mask;
    if (remote < r) break;
    if (remote < p) out.push_back(remote);
  }
  return out;
}

template <class V, class X>
V linear(std::size_t p, const X& x) {
  V s = x(p - 1);
  for (std::size_t r = p - 1; r-- > 0;) s = s + x(r);
  return s;
}

template <class V, class X>
V recursive_doubling(std::size_t p, const X& x) {
  const std::size_t adj = floor_pow2(p), extra = p - adj;
  std::vector<V> v;
  v.reserve(adj);
  for (std::size_t k = 0; k < adj; ++k) {
    v.push_back(k < extra ? x(2 * k) + x(2 * k + 1) : x(k + extra));
  }
  for (std::size_t d = 1; d < adj; d *= 2) {
    for (std::size_t k = 0; k < adj; k += 2 * d) v[k] = v[k] + v[k + d];
  }
  return v[0];
}

// COLL_BASE_COMPUTE_BLOCKCOUNT(m, P): the first m % P blocks hold one more.
std::size_t ring_block(std::size_t m, std::size_t p, std::size_t j) {
  const std::size_t late = m / p, split = m % p, early = late + (split ? 1 : 0);
  return j < split * early ? j / early : split + (j - split * early) / late;
}

template <class V, class X>
V chain_from(std::size_t first, std::size_t p, const X& x) {
  V s = x(first % p);
  for (std::size_t k = 1; k < p; ++k) s = s + x((first + k) % p);
  return s;
}

template <class V, class X>
V halving_tree(std::size_t lo, std::size_t hi, const X& x) {
  if (hi - lo == 1) return x(lo);
  const std::size_t mid = lo + (hi - lo) / 2;
  return halving_tree<V>(lo, mid, x) + halving_tree<V>(mid, hi, x);
}

// ncclGetBtree (NVIDIA/nccl src/graph/trees.cc): children of `rank`.
std::vector<std::size_t> nccl_btree_children(int rank, int nranks) {
  int bit = 1;
  for (; bit < nranks; bit <<= 1) {
    if (bit & rank) break;
  }
  if (rank == 0) {
    if (nranks > 1) return {static_cast<std::size_t>(bit >> 1)};
    return {};
  }
  int lowbit = bit >> 1;
  if (lowbit == 0) return {};
  const int down0 = rank - lowbit;
  int down1 = rank + lowbit;
  while (down1 >= nranks) {
    down1 = lowbit == 0 ? -1 : rank + lowbit;
    lowbit >>= 1;
  }
  std::vector<std::size_t> out{static_cast<std::size_t>(down0)};
  if (down1 >= 0) out.push_back(static_cast<std::size_t>(down1));
  return out;
}

template <class V, class X>
V nccl_tree_value(std::size_t node, std::size_t p, const X& x) {
  V acc = x(node);
  for (std::size_t c : nccl_btree_children(static_cast<int>(node), static_cast<int>(p))) {
    acc = acc + nccl_tree_value<V>(c, p, x);
  }
  return acc;
}

template <class V, class X>
V ompi_algorithm(int number, std::size_t p, std::size_t m, std::size_t j, std::size_t type_size,
                 const X& x) {
  if (p == 1) return x(0);  // coll/self: a copy
  switch (number) {
    case 1:
      return linear<V>(p, x);
    case 2:
      switch (ompi_default_reduce_algorithm(p, m, type_size)) {
        case 1:  // linear
        case 2:  // chain, fanout 0 -> 1: the chain P-1 -> ... -> 0
        case 3:  // pipeline: the same chain
          return linear<V>(p, x);
        case 4:
          return reduce_tree<V>(0, x, [p](std::size_t r) { return binary_children(r, p); });
        case 5:
          return reduce_tree<V>(0, x, [p](std::size_t r) { return binomial_children(r, p); });
        case 7:
          // redscat_gather falls back to linear when m < 2^k, and the rules
          // pick it only below 8 bytes (m = 1 float): always that fallback.
          if (m < floor_pow2(p)) return linear<V>(p, x);
          break;
        default:
          break;
      }
      throw std::logic_error("ompi-nonoverlapping: reduce algorithm not modelled");
    case 3:
      return recursive_doubling<V>(p, x);
    case 4:
    case 5:
      if (m < p) return recursive_doubling<V>(p, x);
      return chain_from<V>(ring_block(m, p, j), p, x);
    case 6:
      if (m < floor_pow2(p)) return linear<V>(p, x);
      return recursive_doubling<V>(p, x);
    default:
      throw std::logic_error("unknown Open MPI allreduce algorithm");
  }
}

std::size_t nccl_chunk(std::size_t m, std::size_t p, std::size_t j, std::size_t type_size) {
  const std::size_t align = 16 / type_size;
  std::size_t chunk = (m + p - 1) / p;
  chunk = (chunk + align - 1) / align * align;
  return j / chunk;
}

template <class V, class X>
V element(Collective c, std::size_t p, std::size_t m, std::size_t j, std::size_t type_size,
          const X& x) {
  switch (c) {
    case Collective::ompi_default:
      return ompi_algorithm<V>(ompi_default_allreduce_algorithm(p, m, type_size), p, m, j,
                               type_size, x);
    case Collective::nccl_ring:
      return chain_from<V>(nccl_chunk(m, p, j, type_size) + 1, p, x);
    case Collective::nccl_tree:
      return nccl_tree_value<V>(0, p, x);
    case Collective::tree:
      return halving_tree<V>(0, p, x);
    case Collective::exact:
      throw std::logic_error("exact has no association order");
    default:
      return ompi_algorithm<V>(ompi_algorithm_number(c), p, m, j, type_size, x);
  }
}

void check_shape(std::size_t ranks, std::size_t m) {
  if (ranks < 1 || ranks > kMaxCollectiveRanks) {
    throw std::invalid_argument("ranks " + std::to_string(ranks) + " outside 1.." +
                                std::to_string(kMaxCollectiveRanks));
  }
  if (m == 0) throw std::invalid_argument("m = 0: nothing to reduce");
}

}  // namespace

template <class T>
std::vector<T> allreduce_model(Collective algorithm, std::span<const T> data, std::size_t ranks) {
  if (ranks == 0 || data.size() % ranks != 0) {
    throw std::invalid_argument("allreduce_model: " + std::to_string(data.size()) +
                                " values are not " + std::to_string(ranks) + " equal rows");
  }
  const std::size_t m = data.size() / ranks;
  check_shape(ranks, m);
  std::vector<T> out(m);
  for (std::size_t j = 0; j < m; ++j) {
    const auto x = [&](std::size_t r) { return data[r * m + j]; };
    if (algorithm == Collective::exact) {
      ExactSum acc;
      for (std::size_t r = 0; r < ranks; ++r) acc.add(x(r));
      out[j] = Native<T>{}.round_exact(acc);
    } else {
      out[j] = element<T>(algorithm, ranks, m, j, sizeof(T), x);
    }
  }
  return out;
}

template std::vector<float> allreduce_model(Collective, std::span<const float>, std::size_t);
template std::vector<double> allreduce_model(Collective, std::span<const double>, std::size_t);

bool one_rank_is_identity(Collective algorithm) { return algorithm != Collective::exact; }

std::pair<std::size_t, std::size_t> row_block(std::size_t rows, std::size_t ranks, std::size_t r) {
  return {r * rows / ranks, (r + 1) * rows / ranks};
}

template <class T>
std::vector<T> row_block_partials(std::span<const T> global, std::size_t rows, std::size_t ranks) {
  if (rows == 0 || global.size() % rows != 0 || ranks == 0 || ranks > rows) {
    throw std::invalid_argument("row_block_partials: need 1 <= ranks <= rows and whole rows");
  }
  const std::size_t m = global.size() / rows;
  std::vector<T> out(ranks * m);
  for (std::size_t r = 0; r < ranks; ++r) {
    const auto [first, last] = row_block(rows, ranks, r);
    for (std::size_t j = 0; j < m; ++j) {
      T s = global[first * m + j];
      for (std::size_t i = first + 1; i < last; ++i) s = s + global[i * m + j];
      out[r * m + j] = s;
    }
  }
  return out;
}

template std::vector<float> row_block_partials(std::span<const float>, std::size_t, std::size_t);
template std::vector<double> row_block_partials(std::span<const double>, std::size_t, std::size_t);

std::string allreduce_expression(Collective algorithm, std::size_t ranks, std::size_t m,
                                 std::size_t j, std::size_t type_size) {
  check_shape(ranks, m);
  if (j >= m) throw std::invalid_argument("element index outside 0..m-1");
  const auto x = [](std::size_t r) { return Expr{"x" + std::to_string(r)}; };
  if (algorithm == Collective::exact) {
    std::string s = "exact(";
    for (std::size_t r = 0; r < ranks; ++r) s += (r ? ", x" : "x") + std::to_string(r);
    return s + ")";
  }
  return element<Expr>(algorithm, ranks, m, j, type_size, x).text;
}

std::string resolved_algorithm(Collective algorithm, std::size_t ranks, std::size_t m,
                               std::size_t type_size) {
  constexpr const char* kReduce[] = {"",
                                     "linear reduce",
                                     "chain reduce",
                                     "pipeline reduce",
                                     "binary tree reduce",
                                     "binomial tree reduce",
                                     "in-order binary reduce",
                                     "rabenseifner reduce (linear fallback)"};
  if (ranks == 1 && ompi_algorithm_number(algorithm) >= 0) return "copy (one rank)";
  if (algorithm == Collective::ompi_default) {
    const int n = ompi_default_allreduce_algorithm(ranks, m, type_size);
    for (const auto& info : collective_catalogue()) {
      if (ompi_algorithm_number(info.algorithm) == n) {
        return resolved_algorithm(info.algorithm, ranks, m, type_size);
      }
    }
  }
  if (algorithm == Collective::ompi_nonoverlapping) {
    return std::string(kReduce[ompi_default_reduce_algorithm(ranks, m, type_size)]) + " + bcast";
  }
  return std::string(name(algorithm));
}

}  // namespace fplab
