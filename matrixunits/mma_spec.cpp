#include "matrixunits/mma_spec.hpp"

#include <algorithm>
#include <charconv>
#include <stdexcept>

#include "matrixunits/instruction_tables.hpp"

namespace fplab {

namespace {

[[noreturn]] void refuse(const std::string& message) { throw std::invalid_argument(message); }

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      parts.emplace_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

int positive_int(std::string_view s) {
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return (ec == std::errc() && end == s.data() + s.size() && v > 0) ? v : 0;
}

// NVIDIA's "m16n8k16" or AMD's "16x16x16": m, n, k (0 when malformed).
struct Shape {
  int m = 0, n = 0, k = 0;
};
Shape parse_nv_shape(std::string_view s) {
  const auto n_at = s.find('n'), k_at = s.find('k');
  if (s.empty() || s[0] != 'm' || n_at == std::string_view::npos ||
      k_at == std::string_view::npos || k_at < n_at) {
    return {};
  }
  return {positive_int(s.substr(1, n_at - 1)), positive_int(s.substr(n_at + 1, k_at - n_at - 1)),
          positive_int(s.substr(k_at + 1))};
}
Shape parse_amd_shape(std::string_view s) {
  const auto p = split(s, 'x');
  if (p.size() != 3) return {};
  return {positive_int(p[0]), positive_int(p[1]), positive_int(p[2])};
}

MmaType parse_type(const std::string& t, MatrixVendor v) {
  if (t == "f16") return MmaType::f16;
  if (t == "bf16") return MmaType::bf16;
  if (t == "f32") return MmaType::f32;
  if (v == MatrixVendor::nvidia) {
    if (t == "tf32") return MmaType::tf32;
    if (t == "e4m3") return MmaType::e4m3;
    if (t == "e5m2") return MmaType::e5m2;
  } else {
    if (t == "xf32") return MmaType::xf32;
    if (t == "fp8") return MmaType::e4m3_fnuz;
    if (t == "bf8") return MmaType::e5m2_fnuz;
  }
  if (t == "f64" || t == "e2m1" || t == "e3m2" || t == "e2m3") {
    refuse("type " + t + " is not modelled (fplab models fp16, bf16, tf32, fp8 and AMD's f32)");
  }
  refuse("unknown type '" + t + "'");
}

bool is_fp8(MmaType t) {
  return t == MmaType::e4m3 || t == MmaType::e5m2 || t == MmaType::e4m3_fnuz ||
         t == MmaType::e5m2_fnuz;
}

// mma.SHAPE.D.A.B.C, wgmma/tcgen05.SHAPE.D.A.B; block-scaled:
// mma.SHAPE.blockN.D.A.B.C.S, tcgen05.SHAPE.blockN.D.A.B.S
void parse_nv_qualifier(MmaSpec& s) {
  auto f = split(s.qualifier, '.');
  const bool scaled = f.size() > 1 && f[1].rfind("block", 0) == 0;
  const std::size_t fields = (s.family == MmaFamily::mma ? 5 : 4) + (scaled ? 2 : 0);
  const Shape shape = parse_nv_shape(f[0]);
  if (f.size() != fields || shape.m == 0 || shape.n == 0 || shape.k == 0) {
    refuse("'" + std::string(name(s.family)) + "." + s.qualifier + "' is not " +
           std::string(name(s.family)) +
           (s.family == MmaFamily::mma ? ".mMnNkK.D.A.B.C (e.g. mma.m16n8k16.f32.bf16.bf16.f32)"
                                       : ".mMnNkK.D.A.B (e.g. wgmma.m64n8k16.f32.bf16.bf16)"));
  }
  if (scaled) {
    if (s.family == MmaFamily::wgmma) refuse("wgmma has no block-scaled forms");
    s.block = positive_int(std::string_view(f[1]).substr(5));
    if (f.back() != "ue8m0") {
      refuse("scale type " + f.back() + " is not modelled (ue8m0 is; ue4m3 scales fp4)");
    }
    f.erase(f.begin() + 1);
    f.pop_back();
  }
  s.m = shape.m;
  s.n = shape.n;
  s.k = shape.k;
  s.d = parse_type(f[1], MatrixVendor::nvidia);
  s.a = parse_type(f[2], MatrixVendor::nvidia);
  s.b = parse_type(f[3], MatrixVendor::nvidia);
  s.c = s.family == MmaFamily::mma ? parse_type(f[4], MatrixVendor::nvidia) : s.d;
}

// isa/amd.py's mfma.__init__: D_SHAPE+TYPE, D_SHAPE+TYPE_1k, D_SHAPE_TYPE,
// D_SHAPE_BLOCKS_TYPE, D_SHAPE_A_B (fp8/bf8).
void parse_amd_qualifier(MmaSpec& s) {
  const auto q = split(s.qualifier, '_');
  std::string d, shape, a, b;
  auto shape_and_type = [&](const std::string& st) {
    const std::size_t type_len = st.ends_with("bf16") ? 4 : 3;
    if (st.size() <= type_len) return;
    shape = st.substr(0, st.size() - type_len);
    a = b = st.substr(st.size() - type_len);
  };
  if (q.size() == 2 || (q.size() == 3 && q[2] == "1k")) {
    d = q[0];
    shape_and_type(q[1]);
  } else if (q.size() == 3 || q.size() == 4) {
    d = q[0];
    shape = q[1];
    const bool fp8 = q.size() == 4 && (q[3] == "fp8" || q[3] == "bf8");
    a = q.size() == 3 ? q[2] : (fp8 ? q[2] : q[3]);
    b = q.size() == 3 ? q[2] : q[3];
  }
  const Shape sh = parse_amd_shape(shape);
  if (sh.m == 0 || sh.n == 0 || sh.k == 0) {
    refuse("'mfma." + s.qualifier +
           "' is not an AMD mfma instruction (e.g. mfma.f32_16x16x16_bf16)");
  }
  s.m = sh.m;
  s.n = sh.n;
  s.k = sh.k;
  s.d = s.c = parse_type(d, MatrixVendor::amd);
  s.a = parse_type(a, MatrixVendor::amd);
  s.b = parse_type(b, MatrixVendor::amd);
}

std::string join(const std::vector<std::string_view>& items) {
  std::string out;
  for (const auto& i : items) out += std::string(out.empty() ? "" : ", ") + std::string(i);
  return out;
}

// mma, mfma: the architecture's list (instruction_tables.hpp).
void check_listed(const MmaSpec& s) {
  const auto listed = s.block > 0 ? listed_block_scale_qualifiers(s.architecture)
                                  : listed_qualifiers(s.architecture);
  if (listed.empty()) {
    refuse(std::string(name(s.architecture)) + " has no block-scaled mma (rtx-blackwell has)");
  }
  if (std::find(listed.begin(), listed.end(), s.qualifier) != listed.end()) return;
  std::vector<std::string_view> same_shape;
  for (const auto q : listed) {
    MmaSpec other = s;
    other.qualifier = std::string(q);
    try {
      s.family == MmaFamily::mfma ? parse_amd_qualifier(other) : parse_nv_qualifier(other);
    } catch (const std::invalid_argument&) {
      continue;  // an unmodelled listed instruction
    }
    if (other.m == s.m && other.n == s.n && other.k == s.k) same_shape.push_back(q);
  }
  const std::string arch(name(s.architecture)), family(name(s.family));
  if (!same_shape.empty()) {
    refuse(arch + "'s " + family + " does not accept the types of '" + s.qualifier +
           "' at this shape (it has: " + join(same_shape) + ")");
  }
  refuse(arch + " has no instruction " + family + "." + s.qualifier + " (its " + family + ": " +
         join(listed) + ")");
}

bool either_is(const MmaSpec& s, MmaType t) { return s.a == t || s.b == t; }

// nv_wgmma.py and nv_tcgen05mma.py's asserts.
void check_wgmma_tcgen05(const MmaSpec& s) {
  const std::string what = name(s);
  const bool wgmma = s.family == MmaFamily::wgmma;
  if (wgmma ? s.m != 64 : (s.m != 64 && s.m != 128)) {
    refuse(what + ": m must be " + (wgmma ? "64" : "64 or 128"));
  }
  if (s.n < 8 || s.n > 256 || s.n % 8 != 0) refuse(what + ": n must be 8, 16, ..., 256");
  if (s.block > 0) {  // tcgen05 kind::mxf8f6f4 (nv_tcgen05mma.py's block-scale asserts)
    if (s.m != 128 || s.k != 32 || s.block != 32 || s.d != MmaType::f32 || !is_fp8(s.a) ||
        !is_fp8(s.b)) {
      refuse(what + ": the block-scaled tcgen05 is m128, k32, block32, f32 with fp8 inputs");
    }
    return;
  }
  const bool f32 = s.d == MmaType::f32;
  bool ok = false;
  if (s.k == 8) {
    ok = s.a == MmaType::tf32 && s.b == MmaType::tf32 && f32;
  } else if (s.k == 16) {
    const bool half = s.a == MmaType::f16 && s.b == MmaType::f16;
    const bool sixteen = (s.a == MmaType::f16 || s.a == MmaType::bf16) &&
                         (s.b == MmaType::f16 || s.b == MmaType::bf16);
    ok = wgmma ? (half && (f32 || s.d == MmaType::f16)) ||
                     (s.a == MmaType::bf16 && s.b == MmaType::bf16 && f32)
               : (sixteen && f32) || (half && s.d == MmaType::f16);
  } else if (s.k == 32) {
    ok = is_fp8(s.a) && is_fp8(s.b) && (f32 || s.d == MmaType::f16);
  } else {
    refuse(what + ": k must be 8 (tf32), 16 (f16, bf16) or 32 (fp8)");
  }
  if (!ok || either_is(s, MmaType::f32)) {
    refuse(what + ": k=" + std::to_string(s.k) + " does not accept these types");
  }
}

int emin_of(MmaType t) { return value_format(t).emin; }

}  // namespace

std::string_view name(MmaFamily f) {
  switch (f) {
    case MmaFamily::mma:
      return "mma";
    case MmaFamily::wgmma:
      return "wgmma";
    case MmaFamily::tcgen05:
      return "tcgen05";
    case MmaFamily::mfma:
      return "mfma";
  }
  return "?";
}

std::string_view name(MmaType t) {
  switch (t) {
    case MmaType::f16:
      return "f16";
    case MmaType::bf16:
      return "bf16";
    case MmaType::tf32:
      return "tf32";
    case MmaType::xf32:
      return "xf32";
    case MmaType::f32:
      return "f32";
    case MmaType::e4m3:
      return "e4m3";
    case MmaType::e5m2:
      return "e5m2";
    case MmaType::e4m3_fnuz:
      return "fp8";
    case MmaType::e5m2_fnuz:
      return "bf8";
  }
  return "?";
}

Format value_format(MmaType t) {
  switch (t) {
    case MmaType::f16:
      return kFP16;
    case MmaType::bf16:
      return kBF16;
    case MmaType::tf32:
    case MmaType::xf32:
      return kTF32;
    case MmaType::f32:
      return kFP32;
    case MmaType::e4m3:
      return kE4M3;
    case MmaType::e5m2:
      return kE5M2;
    // AMD's fnuz formats: the whole top binade finite, no infinities.
    case MmaType::e4m3_fnuz:
      return Format{"e4m3fnuz", 4, 7, -7};
    case MmaType::e5m2_fnuz:
      return Format{"e5m2fnuz", 3, 15, -15};
  }
  return kFP32;
}

bool has_infinity(MmaType t) {
  return t != MmaType::e4m3 && t != MmaType::e4m3_fnuz && t != MmaType::e5m2_fnuz;
}

bool truncates_to_tf32(MmaType t) { return t == MmaType::tf32 || t == MmaType::xf32; }

MmaSpec parse_mma_spec(std::string_view text) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) {
    refuse("'" + std::string(text) +
           "' is not ARCH:INSTRUCTION (e.g. hopper:wgmma.m64n8k16.f32.bf16.bf16)");
  }
  MmaSpec s;
  s.architecture = parse_matrix_architecture(text.substr(0, colon));
  const std::string_view instruction = text.substr(colon + 1);
  const auto dot = instruction.find('.');
  const std::string family(instruction.substr(0, dot));
  const auto families = {MmaFamily::mma, MmaFamily::wgmma, MmaFamily::tcgen05, MmaFamily::mfma};
  const auto known = std::find_if(families.begin(), families.end(),
                                  [&](MmaFamily f) { return name(f) == family; });
  if (known == families.end()) {
    refuse("unknown instruction family '" + family + "' (mma, wgmma, tcgen05, mfma)");
  }
  s.family = *known;
  if (dot == std::string_view::npos) refuse("'" + family + "' needs its qualifiers after a '.'");
  s.qualifier = std::string(instruction.substr(dot + 1));

  const std::string arch(name(s.architecture));
  const bool amd = describe(s.architecture).vendor == MatrixVendor::amd;
  if (amd != (s.family == MmaFamily::mfma)) {
    refuse(arch + " has no " + family + " instructions (" +
           (amd ? "AMD: mfma" : "NVIDIA: mma, wgmma on hopper, tcgen05 on blackwell") + ")");
  }
  if (s.family == MmaFamily::wgmma && s.architecture != MatrixArchitecture::hopper) {
    refuse(arch + " has no wgmma instructions (hopper only)");
  }
  if (s.family == MmaFamily::tcgen05 && s.architecture != MatrixArchitecture::blackwell) {
    refuse(arch + " has no tcgen05 instructions (blackwell only)");
  }
  amd ? parse_amd_qualifier(s) : parse_nv_qualifier(s);
  if (s.family == MmaFamily::mma || s.family == MmaFamily::mfma) {
    check_listed(s);
  } else {
    check_wgmma_tcgen05(s);
  }
  return s;
}

std::string name(const MmaSpec& s) {
  return std::string(name(s.architecture)) + ":" + std::string(name(s.family)) + "." + s.qualifier;
}

DotAddRule dot_add_rule(const MmaSpec& s) {
  const ArchitectureDescription& arch = describe(s.architecture);
  DotAddRule r;
  r.a_emin = emin_of(s.a);
  r.b_emin = emin_of(s.b);
  r.c_emin = emin_of(s.d);  // NVIDIA converts C to D's type first; AMD's are f32
  r.group = s.k;
  if (arch.vendor == MatrixVendor::nvidia) {
    const bool fp8 = is_fp8(s.a);
    r.algorithm = DotAddAlgorithm::nv_fused;
    r.fraction_bits = fp8 ? arch.fp8_fraction_bits : arch.fraction_bits;
    r.result = s.d == MmaType::f16                       ? ResultRounding::f16_nearest_even
               : (fp8 && arch.fp8_f32_result_bits == 13) ? ResultRounding::f32_e8m13_toward_zero
                                                         : ResultRounding::f32_toward_zero;
    const bool full_k = (s.k == 8 && s.a == MmaType::tf32) ||
                        (s.k == 16 && (s.a == MmaType::f16 || s.a == MmaType::bf16)) ||
                        (s.k == 32 && fp8);
    if (s.family == MmaFamily::mma && arch.splits_k && full_k) r.group = s.k / 2;
    return r;
  }
  r.result = ResultRounding::f32_nearest_even;
  if (s.a == MmaType::f32) {
    r.algorithm = DotAddAlgorithm::fma_chain;
    r.group = 1;
  } else if (s.a == MmaType::xf32) {
    r.algorithm = DotAddAlgorithm::amd_fused;
    r.group = 4;
  } else if (is_fp8(s.a)) {
    r.algorithm = DotAddAlgorithm::amd_fused_fp8;
    r.group = 16;
  } else if (arch.amd_fused_16bit) {
    r.algorithm = DotAddAlgorithm::amd_fused;
    r.group = std::min(8, s.k);
  } else {
    r.algorithm = DotAddAlgorithm::amd_pairwise;
    r.group = (s.a == MmaType::bf16 && !s.qualifier.ends_with("_1k")) ? 2 : 4;
    r.flush_subnormals = arch.flushes_subnormals;
  }
  return r;
}

std::vector<MmaSpec> listed_instructions(MatrixArchitecture a) {
  std::vector<std::string> texts;
  const std::string arch(name(a));
  const bool amd = describe(a).vendor == MatrixVendor::amd;
  for (const auto q : listed_qualifiers(a))
    texts.push_back(arch + (amd ? ":mfma." : ":mma.") + std::string(q));
  if (a == MatrixArchitecture::hopper) {
    for (const char* q :
         {"m64n8k8.f32.tf32.tf32", "m64n8k16.f32.f16.f16", "m64n8k16.f16.f16.f16",
          "m64n8k16.f32.bf16.bf16", "m64n8k32.f32.e4m3.e4m3", "m64n8k32.f32.e5m2.e4m3",
          "m64n8k32.f16.e4m3.e5m2", "m64n8k32.f16.e5m2.e5m2"}) {
      texts.push_back(arch + ":wgmma." + q);
    }
  }
  for (const auto q : listed_block_scale_qualifiers(a))
    texts.push_back(arch + ":mma." + std::string(q));
  if (a == MatrixArchitecture::blackwell) {
    for (const char* q :
         {"m128n8k32.block32.f32.e4m3.e5m2.ue8m0", "m128n16k32.block32.f32.e5m2.e5m2.ue8m0",
          "m64n8k8.f32.tf32.tf32", "m64n8k16.f32.f16.f16", "m64n8k16.f32.bf16.f16",
          "m64n8k16.f16.f16.f16", "m128n8k16.f32.bf16.bf16", "m64n8k32.f32.e4m3.e4m3",
          "m64n8k32.f16.e5m2.e4m3"}) {
      texts.push_back(arch + ":tcgen05." + q);
    }
  }
  std::vector<MmaSpec> out;
  for (const auto& t : texts) {
    try {
      out.push_back(parse_mma_spec(t));
    } catch (const std::invalid_argument&) {
      // f64 and fp4 instructions: listed by MMA-Sim, not modelled here
    }
  }
  return out;
}

}  // namespace fplab
