// fplab diff on people's own arrays: two .npy files, two .safetensors files
// (tensor by tensor, matched by name) or two text/CSV files of numbers
// (column by column), compared element by element.
//
// For every element pair (A is the baseline):
//   ulps      numpy.testing.nulp_diff's count: |integer_repr(a) -
//             integer_repr(b)| with the sign-magnitude mapping of
//             io/array.hpp, so +0 and -0 are 0 ulps apart and +-inf are one
//             past the largest finite value. Counted exactly as an unsigned
//             64-bit integer, where nulp_diff subtracts in the array's own
//             integer type (wrapping for far-apart values of opposite sign)
//             and returns the count as a float of the array's type (rounding
//             counts above 2^11 for float16, 2^24 for float32, 2^53 for
//             float64). Both agree wherever nulp_diff's result is exact.
//   relative  |b - a| / |a|, evaluated in double (inf when a is 0 and b is
//             not; 0 when both are zero).
// Listed separately, with their index and both values:
//   NaN mismatch          one side NaN, the other not (no ulps count: numpy
//                         would count against its canonical NaN's bits)
//   NaN payload           both NaN with other bits (0 ulps, as nulp_diff)
//   Inf mismatch          one side +-inf, the other not the same inf
//   signed-zero mismatch  +0 against -0 (0 ulps, but not the same bits)
//
// Tolerance (reports/tolerance.hpp): by default every element must be
// bit-identical. With --ulps N, --rel X and/or --atol Y an element is
// within tolerance when its ulps <= N, its relative error <= X or
// |b - a| <= Y (any one suffices, unless the tolerance says "and"; numpy's
// assert_allclose instead requires |b - a| <= atol + rtol * |b|); NaN and
// Inf mismatches never are (but under `ignore`). Tolerance rules, when
// given, choose each array's tolerance: the first rule whose pattern
// matches KEY/NAME (an array with a name of its own) or KEY (the file's
// path as the caller names it) wins, else the default tolerance applies.
//
// Names: an array is shown by its name in the file (a .safetensors tensor,
// a column under a CSV header) or, unnamed (a .npy file, a CSV without a
// header), by A's file name ("base.npy"); the text, Markdown and JSON use
// that one name. Arrays are listed worst first (NaN, then Inf mismatches,
// then by max ulps; ties in file order, TensorDiff::row). Warnings about
// the comparison (ArrayDiffReport::warnings) go into every form.
//
// Drifted elements: those beyond tolerance, worst first (NaN mismatches,
// then Inf mismatches, then by ulps, larger first; ties by position), the
// first `drift_limit` of them kept with their multi-index and both values.
//
// Shape, dtype or name mismatches are errors (InputError, exit 2). Names
// must match, except that an unnamed array (a .npy file, a one-column text
// file without a header) matches the other side's single array.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/array.hpp"
#include "reports/tolerance.hpp"

namespace fplab {

using ArrayTolerance = Tolerance;

// One element pair: where it is and both bit patterns.
struct ElementMismatch {
  enum class Kind { nan, nan_payload, inf, signed_zero, ulps };
  Kind kind = Kind::nan;
  std::string tensor;              // display name: "x", "base.npy", "x ~ y"
  std::vector<std::size_t> index;  // multi-index, row-major
  ElementType type = ElementType::float64;
  std::uint64_t a_bits = 0;
  std::uint64_t b_bits = 0;
  std::uint64_t ulps = 0;                        // 0 for NaN mismatches
  double relative = 0.0;                         // |b - a| / |a| (inf when a is 0, b is not)
  double absolute = 0.0;                         // |b - a| in double (inf with an infinity)
  [[nodiscard]] std::string index_text() const;  // "[2, 5]"
  [[nodiscard]] std::string a_text() const;      // "decimal (hex)"
  [[nodiscard]] std::string b_text() const;
};
std::string_view name(ElementMismatch::Kind k);  // "NaN mismatch", ..., "ulps"

struct TensorDiff {
  std::string name_a;
  std::string name_b;
  ElementType type = ElementType::float64;
  std::vector<std::size_t> shape;
  std::size_t row = 0;  // position in A's file
  Tolerance tolerance;  // the one applied
  std::string rule;     // the pattern that chose it ("" for the default)
  std::size_t elements = 0;
  std::size_t bit_identical = 0;
  std::size_t beyond_tolerance = 0;
  std::uint64_t max_ulps = 0;  // over every pair but NaN mismatches
  double max_relative = 0.0;   // idem
  std::size_t nan_mismatches = 0;
  std::size_t nan_payloads = 0;
  std::size_t inf_mismatches = 0;
  std::size_t signed_zero_mismatches = 0;
  // histogram[k]: pairs with ulps in [2^(k-1), 2^k - 1]; histogram[0] = 0 ulps.
  std::vector<std::size_t> histogram = std::vector<std::size_t>(65, 0);
  // Special pairs within tolerance (NaN payloads, signed zeros that a
  // tolerance accepts): the first few of each kind.
  std::vector<ElementMismatch> listed;
  // Beyond tolerance, worst first, at most drift_limit.
  std::vector<ElementMismatch> drifted;
  [[nodiscard]] std::string display_name() const;  // "x", "x ~ y"
  [[nodiscard]] std::string shape_text() const;    // "(2, 3)", "(5,)", "()"
};

// An array in memory without a copy: `size` elements of element_bits(type)
// bits each, or, for io/array.hpp's Array, 64-bit slots holding them.
struct ArrayView {
  std::string name;
  ElementType type = ElementType::float64;
  std::vector<std::size_t> shape;
  const void* data = nullptr;
  std::size_t slot_bytes = 8;  // 2, 4 or 8
  std::size_t size = 0;
  [[nodiscard]] std::uint64_t bits(std::size_t i) const;
  [[nodiscard]] std::string shape_text() const;
};
ArrayView view_of(const Array& a);

struct ArrayDiffReport {
  std::string file_a;
  std::string file_b;
  ArrayTolerance tolerance;         // the default
  std::vector<TensorDiff> tensors;  // worst first
  std::vector<std::string> warnings;
  std::vector<std::string> rules_used;  // patterns of the rules that chose an array's tolerance
  [[nodiscard]] std::size_t elements() const;
  [[nodiscard]] std::size_t bit_identical() const;
  [[nodiscard]] std::size_t beyond_tolerance() const;
  [[nodiscard]] std::uint64_t max_ulps() const;
  [[nodiscard]] double max_relative() const;
  // The drifted elements of every array, worst first, at most `limit`.
  [[nodiscard]] std::vector<ElementMismatch> worst(std::size_t limit) const;
  // 0: every element within tolerance; 1: not.
  [[nodiscard]] int exit_code() const { return beyond_tolerance() == 0 ? 0 : 1; }
};

// "0", "1", "2-3", "4-7", ... for histogram bucket k.
std::string ulps_bucket_label(std::size_t k);

// One pair of arrays (the name is a's). Throws InputError on a shape or
// dtype mismatch.
TensorDiff compare_arrays(const ArrayView& a, const ArrayView& b, const ArrayTolerance& tolerance,
                          std::size_t drift_limit = 50);

// Throws InputError on a name, shape or dtype mismatch. Each array keeps
// its `drift_limit` worst drifted elements. `rules` and `key`: above.
ArrayDiffReport diff_arrays(const std::string& file_a, const std::vector<Array>& a,
                            const std::string& file_b, const std::vector<Array>& b,
                            const ArrayTolerance& tolerance, std::size_t drift_limit = 50,
                            const std::vector<ToleranceRule>& rules = {},
                            const std::string& key = "");

// Plain text: one row per tensor that is not bit-identical (and a count of
// those that are), the histogram, the drifted elements worst first (at
// most `limit`) and the special pairs within tolerance.
std::string format_array_diff(const ArrayDiffReport& d, std::size_t limit = 50);
// The same as a Markdown summary for a pull-request comment (at most
// `limit` arrays and `limit` drifted elements).
std::string format_array_diff_markdown(const ArrayDiffReport& d, std::size_t limit = 50);
// Indices are arrays of numbers; values "decimal" with their exact "hex".
nlohmann::json array_diff_to_json(const ArrayDiffReport& d, std::size_t limit = 50);

}  // namespace fplab
