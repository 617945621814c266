// collectives/: the all-reduce order models, their names, the exact MPI_Op's
// representation and the 2-D .npy reader. No MPI here: the models against
// real Open MPI are tests/test_collectives_mpi.cpp.
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "collectives/algorithm.hpp"
#include "collectives/allreduce_model.hpp"
#include "collectives/exact_limbs.hpp"
#include "collectives/npy_matrix.hpp"
#include "reductions/exact.hpp"
#include "reductions/pairwise.hpp"
#include "reductions/strategy.hpp"
#include "tests/npy_bytes.hpp"

using namespace fplab;

namespace {

// Values over 17 binades, so that different association orders round
// differently (seeded; no std::*_distribution).
template <class T>
std::vector<T> seeded_rows(std::size_t p, std::size_t m, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<T> v(p * m);
  for (auto& x : v) {
    const double u = static_cast<double>(g() >> 11) * 0x1p-53 * 2 - 1;
    x = static_cast<T>(std::ldexp(u, static_cast<int>(g() % 17) - 8));
  }
  return v;
}

template <class T>
auto bits(const std::vector<T>& v) {
  using B = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  std::vector<B> out;
  for (T x : v) out.push_back(std::bit_cast<B>(x));
  return out;
}

}  // namespace

TEST_CASE("collectives: every name parses back to its algorithm", "[collectives]") {
  std::set<std::string> seen;
  for (const auto& info : collective_catalogue()) {
    const std::string n(name(info.algorithm));
    CHECK(parse_collective(n) == info.algorithm);
    CHECK(seen.insert(n).second);
    CHECK_FALSE(info.description.empty());
  }
  CHECK(seen.size() == 11);
  CHECK_THROWS_WITH(parse_collective("ompi-rings"),
                    Catch::StartsWith("unknown collective algorithm 'ompi-rings' (one of"));
  CHECK(ompi_algorithm_number(Collective::ompi_rabenseifner) == 6);
  CHECK(ompi_algorithm_number(Collective::ompi_default) == 0);
  CHECK(ompi_algorithm_number(Collective::nccl_ring) == -1);
}

TEST_CASE("collectives: the association orders, as read from Open MPI 4.1.4 and NCCL",
          "[collectives]") {
  const auto e = [](Collective c, std::size_t p, std::size_t m, std::size_t j,
                    std::size_t size = 4) { return allreduce_expression(c, p, m, j, size); };
  // Basic linear: the root starts from rank P-1 and adds P-2 .. 0.
  CHECK(e(Collective::ompi_linear, 4, 10, 0) == "((x3 + x2) + x1) + x0");
  // Recursive doubling, 7 ranks: pairs (0,1) (2,3) (4,5) folded, then a butterfly.
  CHECK(e(Collective::ompi_recursive_doubling, 7, 10, 0) ==
        "((x0 + x1) + (x2 + x3)) + ((x4 + x5) + x6)");
  CHECK(e(Collective::ompi_recursive_doubling, 4, 10, 3) == "(x0 + x1) + (x2 + x3)");
  // Ring: 10 values on 4 ranks are blocks of 3, 3, 2, 2; block b starts at rank b.
  CHECK(e(Collective::ompi_ring, 4, 10, 0) == "((x0 + x1) + x2) + x3");
  CHECK(e(Collective::ompi_ring, 4, 10, 5) == "((x1 + x2) + x3) + x0");
  CHECK(e(Collective::ompi_ring, 4, 10, 6) == "((x2 + x3) + x0) + x1");
  CHECK(e(Collective::ompi_ring, 4, 10, 9) == "((x3 + x0) + x1) + x2");
  // m < P: the ring hands over to recursive doubling.
  CHECK(e(Collective::ompi_ring, 4, 3, 2) == "(x0 + x1) + (x2 + x3)");
  CHECK(e(Collective::ompi_segmented_ring, 4, 10, 6) == e(Collective::ompi_ring, 4, 10, 6));
  // Rabenseifner: linear below 2^k values, recursive doubling's tree above.
  CHECK(e(Collective::ompi_rabenseifner, 5, 3, 0) == "(((x4 + x3) + x2) + x1) + x0");
  CHECK(e(Collective::ompi_rabenseifner, 5, 4, 0) == "((x0 + x1) + x2) + (x3 + x4)");
  // Nonoverlapping at 4..7 ranks below 4 KiB: coll/tuned's binary tree reduce,
  // node 0's children 1, 2; node 1's 3, 5; node 2's 4, 6: ((child0 + own) + child1).
  CHECK(e(Collective::ompi_nonoverlapping, 7, 10, 0) ==
        "(((x3 + x1) + x5) + x0) + ((x4 + x2) + x6)");
  // ... and the binomial tree at 8 ranks from 8 KiB (2048 floats).
  CHECK(e(Collective::ompi_nonoverlapping, 8, 4096, 0) ==
        "((x1 + x0) + (x3 + x2)) + ((x5 + x4) + (x7 + x6))");
  // NCCL ring: chunk c starts at rank c+1 and completes at rank c.
  CHECK(e(Collective::nccl_ring, 4, 16, 0) == "((x1 + x2) + x3) + x0");
  CHECK(e(Collective::nccl_ring, 4, 16, 15) == "((x0 + x1) + x2) + x3");
  // NCCL tree 0 (ncclGetBtree), 4 ranks: 0 -> 2, 2 -> {1, 3}: own first.
  CHECK(e(Collective::nccl_tree, 4, 16, 0) == "x0 + ((x2 + x1) + x3)");
  CHECK(e(Collective::tree, 6, 1, 0) == "(x0 + (x1 + x2)) + (x3 + (x4 + x5))");
  CHECK(e(Collective::exact, 3, 1, 0) == "exact(x0, x1, x2)");
}

TEST_CASE("collectives: Open MPI 4.1.4's fixed decision rules", "[collectives]") {
  // coll_tuned_decision_fixed.c, commutative branch, spot checks per band.
  CHECK(ompi_default_allreduce_algorithm(2, 1, 4) == 4);      // < 8 bytes
  CHECK(ompi_default_allreduce_algorithm(2, 1000, 4) == 3);   // < 4096
  CHECK(ompi_default_allreduce_algorithm(3, 65536, 4) == 6);  // >= 262144
  CHECK(ompi_default_allreduce_algorithm(3, 16384, 8) == 5);  // 131072 < 262144
  CHECK(ompi_default_allreduce_algorithm(7, 1000, 4) == 3);   // < 8192
  CHECK(ompi_default_allreduce_algorithm(7, 3, 4) == 4);      // < 16
  CHECK(ompi_default_allreduce_algorithm(8, 1037, 8) == 6);   // >= 8192
  CHECK(ompi_default_reduce_algorithm(5, 1000, 4) == 4);      // binary
  CHECK(ompi_default_reduce_algorithm(5, 65536, 4) == 1);     // linear at 262144
  CHECK(ompi_default_reduce_algorithm(8, 65536, 8) == 5);     // binomial
  CHECK(resolved_algorithm(Collective::ompi_default, 7, 1000, 4) == "ompi-recursive-doubling");
  CHECK(resolved_algorithm(Collective::ompi_nonoverlapping, 3, 1000, 4) == "linear reduce + bcast");
}

TEST_CASE("collectives: two ranks give the same bits in every algorithm (D3)", "[collectives]") {
  for (std::size_t m : {1, 2, 7, 1000, 1037}) {
    const auto x = seeded_rows<float>(2, m, 7);
    std::vector<float> expected(m);
    for (std::size_t j = 0; j < m; ++j) expected[j] = x[j] + x[m + j];
    for (const auto& info : collective_catalogue()) {
      if (info.algorithm == Collective::exact) continue;  // correctly rounded: the same here
      CHECK(bits(allreduce_model<float>(info.algorithm, x, 2)) == bits(expected));
    }
    CHECK(bits(allreduce_model<float>(Collective::exact, x, 2)) == bits(expected));
  }
  // Negative control: at three ranks the orders do differ.
  const auto y = seeded_rows<float>(3, 1000, 7);
  CHECK(bits(allreduce_model<float>(Collective::ompi_linear, y, 3)) !=
        bits(allreduce_model<float>(Collective::ompi_ring, y, 3)));
}

TEST_CASE("collectives: one rank is a copy", "[collectives]") {
  const auto x = seeded_rows<double>(1, 37, 3);
  for (const auto& info : collective_catalogue()) {
    CHECK(bits(allreduce_model<double>(info.algorithm, x, 1)) == bits(x));
  }
}

TEST_CASE("collectives: one rank returns every special value unchanged, except exact",
          "[collectives]") {
  // What lets row_parallel skip the model at tensor-parallel degree 1: each
  // partial comes back with its bits, -0 included (a sum started at +0
  // would give +0 + -0 = +0), NaN payloads (quiet and signalling),
  // infinities and subnormals. exact is the one algorithm that rounds its
  // single term, and one_rank_is_identity says so.
  const std::vector<std::uint32_t> special = {0x80000000u, 0x00000000u, 0x7fc00000u, 0xffc12345u,
                                              0x7f800001u, 0xff9abcdeu, 0x7f800000u, 0xff800000u,
                                              0x00000001u, 0x807fffffu, 0x00400000u, 0x7f7fffffu,
                                              0xff7fffffu, 0x3f800000u, 0x80000001u, 0x3eaaaaabu};
  for (const std::size_t m : {1, 2, 7, 16, 1000, 1037}) {
    std::vector<float> x(m);
    const auto random = seeded_rows<float>(1, m, 5);
    for (std::size_t j = 0; j < m; ++j) {
      x[j] = j < special.size() ? std::bit_cast<float>(special[j]) : random[j];
    }
    for (const auto& info : collective_catalogue()) {
      INFO(name(info.algorithm) << ", m " << m);
      const bool unchanged = bits(allreduce_model<float>(info.algorithm, x, 1)) == bits(x);
      if (m >= 6) {  // the NaN payloads are in: exact must show its rounding
        CHECK(unchanged == one_rank_is_identity(info.algorithm));
      } else {
        CHECK((unchanged || !one_rank_is_identity(info.algorithm)));
      }
    }
  }
  // Negative control: exact does change a NaN's payload, and keeps -0.
  const std::vector<float> payload = {std::bit_cast<float>(0xffc12345u), -0.0f};
  const auto e = allreduce_model<float>(Collective::exact, payload, 1);
  CHECK(std::isnan(e[0]));
  CHECK(std::bit_cast<std::uint32_t>(e[0]) != 0xffc12345u);
  CHECK(std::bit_cast<std::uint32_t>(e[1]) == 0x80000000u);
}

TEST_CASE("collectives: tree over ranks is the same for every power-of-two P (D4)",
          "[collectives]") {
  // 16 tiles per output; rank r of P holds the pairwise sum of its 16/P
  // contiguous tiles. The tree over ranks then completes one fixed tree over
  // the tiles: the same bits for P = 1, 2, 4, 8, 16.
  constexpr std::size_t tiles = 16, m = 500;
  const auto t = seeded_rows<float>(tiles, m, 11);
  const auto partials = [&](std::size_t p) {
    std::vector<float> rows(p * m);
    for (std::size_t r = 0; r < p; ++r) {
      for (std::size_t j = 0; j < m; ++j) {
        std::vector<float> mine;
        for (std::size_t k = r * tiles / p; k < (r + 1) * tiles / p; ++k) {
          mine.push_back(t[k * m + j]);
        }
        rows[r * m + j] = sum(parse_strategy("pairwise"), std::span<const float>(mine));
      }
    }
    return rows;
  };
  const auto reference = bits(allreduce_model<float>(Collective::tree, partials(1), 1));
  for (std::size_t p : {2, 4, 8, 16}) {
    CHECK(bits(allreduce_model<float>(Collective::tree, partials(p), p)) == reference);
  }
  // Negative control: Open MPI's ring over the same partials moves with P.
  std::set<std::vector<std::uint32_t>> ring;
  for (std::size_t p : {2, 4, 8, 16}) {
    ring.insert(bits(allreduce_model<float>(Collective::ompi_ring, partials(p), p)));
  }
  CHECK(ring.size() > 1);
}

TEST_CASE("collectives: the exact MPI_Op's limbs merge in any order to the exact sum",
          "[collectives]") {
  std::mt19937_64 g(5);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<double> x = seeded_rows<double>(1, 40, 100 + trial);
    x.push_back(std::numeric_limits<double>::denorm_min());
    x.push_back(-0x1.fffffffffffffp+1000);
    x.push_back(0x1.fffffffffffffp+1000);
    ExactSum reference;
    for (double v : x) reference.add(v);
    std::vector<double> order = x;
    for (int shuffle = 0; shuffle < 3; ++shuffle) {
      std::shuffle(order.begin(), order.end(), g);
      ExactLimbs<double> acc = ExactLimbs<double>::of(order[0]);
      for (std::size_t i = 1; i < order.size(); ++i) acc.merge(ExactLimbs<double>::of(order[i]));
      CHECK(std::bit_cast<std::uint64_t>(acc.round()) ==
            std::bit_cast<std::uint64_t>(reference.to_double()));
    }
    const auto f = seeded_rows<float>(1, 40, 300 + trial);
    ExactSum rf;
    ExactLimbs<float> af = ExactLimbs<float>::of(f[0]);
    rf.add(f[0]);
    for (std::size_t i = 1; i < f.size(); ++i) {
      af.merge(ExactLimbs<float>::of(f[i]));
      rf.add(f[i]);
    }
    CHECK(std::bit_cast<std::uint32_t>(af.round()) == std::bit_cast<std::uint32_t>(rf.to_float()));
  }
  // Signed zeros and special values, as ExactSum and IEEE say.
  auto merged = [](std::initializer_list<float> v) {
    ExactLimbs<float> a = ExactLimbs<float>::of(*v.begin());
    for (auto it = v.begin() + 1; it != v.end(); ++it) a.merge(ExactLimbs<float>::of(*it));
    return a.round();
  };
  CHECK(std::signbit(merged({-0.0f, -0.0f})));
  CHECK_FALSE(std::signbit(merged({-0.0f, 0.0f})));
  CHECK_FALSE(std::signbit(merged({1.0f, -1.0f})));
  CHECK(merged({1.0f, -1.0f}) == 0.0f);
  CHECK(std::isnan(merged({INFINITY, -INFINITY})));
  CHECK(merged({INFINITY, 1.0f}) == INFINITY);
  CHECK(std::isnan(merged({NAN, 1.0f})));
  CHECK(merged({0x1p-149f, 0x1p-149f}) == 0x1p-148f);
  CHECK(merged({0x1.fffffep127f, 0x1.fffffep127f}) == INFINITY);
}

TEST_CASE("collectives: 2-D .npy round trip and errors", "[collectives]") {
  const auto dir = std::filesystem::temp_directory_path() / "fplab-test-collectives-npy";
  std::filesystem::create_directories(dir);
  const std::vector<double> v{1.5, -2.25, 0x1p-1074, 3, 4, 5};
  write_npy_matrix<double>(dir / "a.npy", 2, 3, v);
  const auto m = std::get<Matrix<double>>(read_npy_matrix(dir / "a.npy"));
  CHECK(m.rows == 2);
  CHECK(m.cols == 3);
  CHECK(bits(m.values) == bits(v));
  CHECK_THROWS_WITH(read_npy_matrix(dir / "missing.npy"), Catch::EndsWith("cannot open"));
  CHECK_THROWS_AS(allreduce_model<float>(Collective::ompi_ring, std::vector<float>(6), 4),
                  std::invalid_argument);
  CHECK_THROWS_AS(allreduce_model<float>(Collective::ompi_ring, std::vector<float>(65 * 2), 65),
                  std::invalid_argument);
  std::filesystem::remove_all(dir);
}

namespace {
using fplab::test::npy_bytes;

std::string npy_error(const std::filesystem::path& p, const std::string& file) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << file;
  try {
    (void)read_npy_matrix(p);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST_CASE("collectives: the 2-D reader is io/npy's, narrowed to 2-D float32/float64",
          "[collectives][npy]") {
  const auto dir = std::filesystem::temp_directory_path() / "fplab-test-collectives-npy-reader";
  std::filesystem::create_directories(dir);
  const auto p = dir / "m.npy";
  const auto dict = [](const std::string& descr, const std::string& fortran,
                       const std::string& shape) {
    return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
  };
  // The same 2 x 3 matrix {{1, 2, 3}, {4, 5, 6}} in C order little-endian,
  // Fortran order, and big-endian: all read as the same rows.
  std::string c_le, f_le, c_be;
  const float c_order[] = {1, 2, 3, 4, 5, 6};
  const float f_order[] = {1, 4, 2, 5, 3, 6};
  for (int i = 0; i < 6; ++i) {
    const auto cb = std::bit_cast<std::uint32_t>(c_order[i]);
    const auto fb = std::bit_cast<std::uint32_t>(f_order[i]);
    for (int k = 0; k < 4; ++k) {
      c_le += static_cast<char>((cb >> (8 * k)) & 0xFF);
      f_le += static_cast<char>((fb >> (8 * k)) & 0xFF);
      c_be += static_cast<char>((cb >> (8 * (3 - k))) & 0xFF);
    }
  }
  for (const auto& file : {npy_bytes(dict("<f4", "False", "(2, 3)"), c_le),
                           npy_bytes(dict("<f4", "True", "(2, 3)"), f_le),
                           npy_bytes(dict(">f4", "False", "(2, 3)"), c_be)}) {
    std::ofstream(p, std::ios::binary | std::ios::trunc) << file;
    const auto m = std::get<Matrix<float>>(read_npy_matrix(p));
    CHECK(m.rows == 2);
    CHECK(m.cols == 3);
    CHECK(bits(m.values) == bits(std::vector<float>(std::begin(c_order), std::end(c_order))));
  }
  // Negative control: the Fortran bytes read as C order are another matrix.
  std::ofstream(p, std::ios::binary | std::ios::trunc)
      << npy_bytes(dict("<f4", "False", "(2, 3)"), f_le);
  CHECK(bits(std::get<Matrix<float>>(read_npy_matrix(p)).values) !=
        bits(std::vector<float>(std::begin(c_order), std::end(c_order))));

  // Refused, one line naming the file: not 2-D, not float32/float64, and a
  // header that claims more than the file holds (without reading or
  // allocating for it: 64 x 2^40 floats promised, 24 bytes there).
  CHECK_THAT(npy_error(p, npy_bytes(dict("<f8", "False", "(3,)"), std::string(24, '\0'))),
             Catch::StartsWith(p.string() + ": ") &&
                 Catch::EndsWith("expected a 2-D array (ranks x m), got 1 dimension"));
  CHECK_THAT(npy_error(p, npy_bytes(dict("<f2", "False", "(1, 2)"), std::string(4, '\0'))),
             Catch::EndsWith("unsupported dtype float16 (float32 <f4 or float64 <f8)"));
  CHECK_THAT(npy_error(p, npy_bytes(dict("<f4", "False", "(64, 1099511627776)"), c_le)),
             Catch::Contains("truncated: header promises 70368744177664 values of 4 bytes, "
                             "file holds 24 bytes of data"));
  CHECK_THAT(npy_error(p, npy_bytes(dict("<f8", "False", "(2, 3)"), c_le)),
             Catch::Contains("truncated: header promises 6 values of 8 bytes"));
  CHECK_THAT(npy_error(p, c_le), Catch::Contains("not a .npy file"));
  std::filesystem::remove_all(dir);
}
