#include "matrixunits/architecture.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <stdexcept>
#include <string>

namespace fplab {

namespace {

using A = MatrixArchitecture;
using V = MatrixVendor;

// simulator/nv_ptx.py (arch_accum_fractional_bits, the Ada fp8 and wgmma fp8
// overrides, is_split_k) and simulator/amd.py (operation_type per arch).
constexpr std::array<ArchitectureDescription, 10> kArchitectures{{
    {A::volta, "Volta", V::nvidia, 23, 23, 23, false, false, false},
    {A::turing, "Turing", V::nvidia, 24, 24, 23, false, false, false},
    {A::ampere, "Ampere", V::nvidia, 24, 24, 23, true, false, false},
    {A::ada, "Ada Lovelace", V::nvidia, 24, 13, 13, true, false, false},
    {A::hopper, "Hopper", V::nvidia, 25, 13, 13, false, false, false},
    {A::blackwell, "Blackwell", V::nvidia, 25, 25, 23, false, false, false},
    {A::rtx_blackwell, "RTX Blackwell", V::nvidia, 25, 25, 23, false, false, false},
    {A::cdna1, "CDNA1", V::amd, 0, 0, 0, false, false, false},
    {A::cdna2, "CDNA2", V::amd, 0, 0, 0, false, false, true},
    {A::cdna3, "CDNA3", V::amd, 0, 0, 0, false, true, false},
}};

struct Alias {
  std::string_view text;
  MatrixArchitecture architecture;
};

constexpr std::array<Alias, 17> kAliases{{
    {"v100", A::volta},
    {"t4", A::turing},
    {"a100", A::ampere},
    {"l40", A::ada},
    {"rtx4090", A::ada},
    {"h100", A::hopper},
    {"h800", A::hopper},
    {"h200", A::hopper},
    {"b200", A::blackwell},
    {"b100", A::blackwell},
    {"rtx5090", A::rtx_blackwell},
    {"mi100", A::cdna1},
    {"mi200", A::cdna2},
    {"mi250", A::cdna2},
    {"mi300", A::cdna3},
    {"mi300x", A::cdna3},
    {"ada-lovelace", A::ada},
}};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

std::span<const ArchitectureDescription> matrix_architectures() { return kArchitectures; }

const ArchitectureDescription& describe(MatrixArchitecture a) {
  return kArchitectures.at(static_cast<std::size_t>(a));
}

std::string_view name(MatrixArchitecture a) {
  switch (a) {
    case A::volta:
      return "volta";
    case A::turing:
      return "turing";
    case A::ampere:
      return "ampere";
    case A::ada:
      return "ada";
    case A::hopper:
      return "hopper";
    case A::blackwell:
      return "blackwell";
    case A::rtx_blackwell:
      return "rtx-blackwell";
    case A::cdna1:
      return "cdna1";
    case A::cdna2:
      return "cdna2";
    case A::cdna3:
      return "cdna3";
  }
  return "?";
}

std::string_view name(MatrixVendor v) { return v == V::nvidia ? "nvidia" : "amd"; }

MatrixArchitecture parse_matrix_architecture(std::string_view text) {
  const std::string t = lower(text);
  for (const auto& d : kArchitectures) {
    if (t == name(d.architecture)) return d.architecture;
  }
  for (const auto& alias : kAliases) {
    if (t == alias.text) return alias.architecture;
  }
  std::string known;
  for (const auto& d : kArchitectures)
    known += std::string(known.empty() ? "" : ", ") + std::string(name(d.architecture));
  throw std::invalid_argument("unknown architecture '" + std::string(text) + "' (" + known +
                              "; or a GPU: v100, t4, a100, l40, h100, b200, rtx5090, mi100, "
                              "mi250, mi300)");
}

}  // namespace fplab
