#include "reductions/sum_request.hpp"

#include <fmt/format.h>

#include <cctype>
#include <filesystem>

#include "io/array_slices.hpp"
#include "io/input_error.hpp"
#include "io/numbers.hpp"
#include "io/text_columns.hpp"

namespace fplab {

std::vector<std::string> SumRequest::to_args() const {
  std::vector<std::string> args{"--dtype=" + dtype};
  if (!file.empty()) args.push_back("--file=" + file);
  if (!tensor.empty()) args.push_back("--tensor=" + tensor);
  if (axis) args.push_back("--axis=" + std::to_string(*axis));
  for (const auto& s : strategies) args.push_back("--strategy=" + s);
  if (bfloat16_void) args.emplace_back("--bfloat16-void");
  if (json) args.emplace_back("--json");
  if (csv) args.emplace_back("--csv");
  if (show_tree) args.emplace_back("--show-tree");
  if (narrow) args.emplace_back("--narrow");
  if (no_gpu) args.emplace_back("--no-gpu");
  args.emplace_back("--");
  args.insert(args.end(), numbers.begin(), numbers.end());
  return args;
}

namespace {

// The file to read: --file, or a lone argument naming an existing file
// (empty: the arguments are the numbers). A lone word that is no number but
// looks like a path (a '/' or a file extension such as .npy) and does not
// exist is "no such file", not "is not a number".
std::string input_file(const SumRequest& r) {
  if (r.file.empty() && r.numbers.size() == 1 && std::filesystem::is_regular_file(r.numbers[0])) {
    return r.numbers[0];
  }
  if (r.file.empty() && r.numbers.size() == 1 && !std::filesystem::exists(r.numbers[0])) {
    const std::string& word = r.numbers[0];
    const std::string ext = std::filesystem::path(word).extension().string();
    const bool path_like = word.find('/') != std::string::npos ||
                           (ext.size() > 1 && std::isalpha(static_cast<unsigned char>(ext[1])));
    try {
      parse_number<double>(word);
    } catch (const std::exception&) {
      if (path_like) throw InputError("'" + word + "': no such file");
      throw;
    }
  }
  if (!r.file.empty() && !std::filesystem::exists(r.file)) {
    throw InputError("'" + r.file + "': no such file");
  }
  if (r.numbers.empty() == r.file.empty()) {
    throw InputError("give numbers as arguments or one --file, not both or neither");
  }
  return r.file;
}

template <class T>
SumSlice<T> sum_slice(std::string label, std::vector<T> x, const std::vector<Strategy>& strategies,
                      bool show_tree) {
  if (show_tree && x.size() > kMaxTreeInputs) {
    throw InputError(fmt::format(
        "--show-tree draws sums of at most {} numbers; this one has {} (give fewer numbers)",
        kMaxTreeInputs, x.size()));
  }
  SumSlice<T> s;
  s.label = std::move(label);
  s.values = std::move(x);
  const std::span<const T> xs(s.values);
  s.totals = strategy_totals(xs, strategies);
  s.condition_number = condition_number(xs);
  if (show_tree) {
    for (const auto& st : strategies) s.trees.push_back(association(st, s.values.size()));
  }
  return s;
}

template <class T>
std::vector<SumSlice<T>> sum_slices(const Array& a, const SumRequest& r,
                                    const std::vector<Strategy>& strategies) {
  std::vector<SumSlice<T>> out;
  for (auto& [label, idx] : array_slices(a, r.axis)) {
    out.push_back(sum_slice(std::move(label), slice_values<T>(a, idx), strategies, r.show_tree));
  }
  return out;
}

template <class T>
std::vector<T> parse_all(const std::vector<std::string>& words) {
  std::vector<T> out;
  out.reserve(words.size());
  for (const auto& w : words) out.push_back(parse_number<T>(w));
  return out;
}

// Numbers as arguments, or a text file of numbers: one slice, the whole input.
template <class T>
std::vector<SumSlice<T>> whole_input(const std::filesystem::path& file, const SumRequest& r,
                                     const std::vector<Strategy>& strategies) {
  std::vector<SumSlice<T>> out;
  out.push_back(sum_slice<T>("",
                             file.empty() ? parse_all<T>(r.numbers) : read_text_numbers<T>(file),
                             strategies, r.show_tree));
  return out;
}

}  // namespace

SumAnswer run_sum(const SumRequest& r) {
  const std::filesystem::path file = input_file(r);
  std::vector<Strategy> strategies;
  for (const auto& s : r.strategies) strategies.push_back(parse_strategy(s));
  if (strategies.empty()) strategies = default_strategies();

  SumAnswer answer;
  if (!file.empty() &&
      (array_file_kind(file) != ArrayFile::text || text_columns_have_header(file))) {
    ArrayReadOptions read;
    read.void2_as_bfloat16 = r.bfloat16_void;
    read.text_type = r.dtype == "float32" ? ElementType::float32 : ElementType::float64;
    const Array a = pick_array(file, r.tensor, read);
    if (a.type == ElementType::float16 || a.type == ElementType::bfloat16) {
      answer.input_dtype = std::string(name(a.type));
    }
    answer.along_axis = r.axis.has_value();
    if (a.type == ElementType::float64) {
      answer.slices = sum_slices<double>(a, r, strategies);
    } else {
      answer.slices = sum_slices<float>(a, r, strategies);
    }
    return answer;
  }
  if (r.axis || !r.tensor.empty()) {
    throw InputError("--axis and --tensor apply to .npy and .safetensors files");
  }
  if (r.dtype == "float32") {
    answer.slices = whole_input<float>(file, r, strategies);
  } else {
    answer.slices = whole_input<double>(file, r, strategies);
  }
  return answer;
}

}  // namespace fplab
