#include "bisect/engine_dumps.hpp"

#include <algorithm>
#include <bit>
#include <regex>
#include <stdexcept>

#include "bisect/dump_diff.hpp"
#include "io/input_error.hpp"

namespace fplab::bisect {

namespace {

using Join = ShardRule::Join;

// '*' matches any run of characters; the whole text must match.
bool glob_match(std::string_view pattern, std::string_view text) {
  std::size_t p = 0, t = 0, star = std::string_view::npos, resume = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

struct RankDir {
  long tp = 0;
  std::filesystem::path dir;
};

// The rank folders of DIR, by tensor-parallel rank; DIR itself if it has none.
std::vector<RankDir> rank_dirs(const std::filesystem::path& dir) {
  static const std::regex engine(R"(TP(\d+)_PP(\d+)_Rank\d+_pid\d+)");
  static const std::regex plain(R"(rank_?(\d+))");
  std::vector<RankDir> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (!e.is_directory()) continue;
    const std::string n = e.path().filename().string();
    std::smatch m;
    if (std::regex_match(n, m, engine)) {
      if (m[2] != "0") fail_input(e.path(), "pipeline stages (PP > 0) are not joined");
      out.push_back({std::stol(m[1]), e.path()});
    } else if (std::regex_match(n, m, plain)) {
      out.push_back({std::stol(m[1]), e.path()});
    }
  }
  if (out.empty()) return {{0, dir}};
  std::sort(out.begin(), out.end(), [](const RankDir& a, const RankDir& b) { return a.tp < b.tp; });
  for (std::size_t r = 0; r < out.size(); ++r) {
    if (out[r].tp != static_cast<long>(r)) {
      fail_input(dir, "rank folders are not ranks 0.." + std::to_string(out.size() - 1) +
                          " once each (found rank " + std::to_string(out[r].tp) + ")");
    }
  }
  return out;
}

std::vector<std::string> file_names(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file()) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end(), dump_file_before);
  if (out.empty()) fail_input(dir, "no dump files");
  return out;
}

// A file's tensors in the order it lists them.
std::vector<Array> in_dump_order(const std::filesystem::path& file) {
  std::vector<Array> arrays = read_arrays(file);
  if (file.extension() != ".safetensors") return arrays;  // read in the file's order
  std::vector<Array> out;
  for (const auto& n : dump_order(file)) {
    const auto it =
        std::find_if(arrays.begin(), arrays.end(), [&](const Array& a) { return a.name == n; });
    out.push_back(std::move(*it));
  }
  return out;
}

const ShardRule& rule_for(const std::string& name, const std::vector<ShardRule>& user) {
  for (const auto& r : user)
    if (glob_match(r.pattern, name)) return r;
  for (const auto& r : default_shard_rules())
    if (glob_match(r.pattern, name)) return r;
  return default_shard_rules().back();
}

}  // namespace

namespace {

[[noreturn]] void refuse(const std::string& name, const std::string& why) {
  throw InputError("'" + name + "': " + why);
}

Array concat(const std::vector<Array>& shards, int dim_wanted, const std::string& name) {
  const Array& first = shards[0];
  const auto rank = static_cast<int>(first.shape.size());
  const int d = dim_wanted < 0 ? rank + dim_wanted : dim_wanted;
  if (d < 0 || d >= rank) {
    refuse(name, "concat:" + std::to_string(dim_wanted) + " on a tensor of " +
                     std::to_string(rank) + " dimensions");
  }
  Array out = first;
  out.shape[static_cast<std::size_t>(d)] = 0;
  std::size_t outer = 1;
  for (int k = 0; k < d; ++k) outer *= first.shape[static_cast<std::size_t>(k)];
  for (const Array& s : shards) {
    bool joins = s.type == first.type && s.shape.size() == first.shape.size();
    for (std::size_t k = 0; joins && k < s.shape.size(); ++k)
      joins = k == static_cast<std::size_t>(d) || s.shape[k] == first.shape[k];
    if (!joins) {
      refuse(name, "shards of shapes " + first.shape_text() + " and " + s.shape_text() +
                       " do not join along dimension " + std::to_string(d));
    }
    out.shape[static_cast<std::size_t>(d)] += s.shape[static_cast<std::size_t>(d)];
  }
  out.bits.clear();
  for (std::size_t o = 0; o < outer; ++o) {
    for (const Array& s : shards) {
      const std::size_t run = outer == 0 ? 0 : s.size() / outer;
      out.bits.insert(out.bits.end(), s.bits.begin() + static_cast<std::ptrdiff_t>(o * run),
                      s.bits.begin() + static_cast<std::ptrdiff_t>((o + 1) * run));
    }
  }
  return out;
}

template <class F>
std::uint64_t add_bits(std::uint64_t a, std::uint64_t b) {
  using U = std::conditional_t<sizeof(F) == 4, std::uint32_t, std::uint64_t>;
  return std::bit_cast<U>(
      static_cast<F>(std::bit_cast<F>(static_cast<U>(a)) + std::bit_cast<F>(static_cast<U>(b))));
}

Array sum(const std::vector<Array>& shards, const std::string& name) {
  Array out = shards[0];
  if (out.type != ElementType::float32 && out.type != ElementType::float64) {
    refuse(name,
           "sum of " + std::string(fplab::name(out.type)) + " shards (float32 and float64 only)");
  }
  for (std::size_t r = 1; r < shards.size(); ++r) {
    if (shards[r].type != out.type || shards[r].shape != out.shape) {
      refuse(name,
             "rank " + std::to_string(r) + "'s shard has another shape or dtype than rank 0's");
    }
    for (std::size_t i = 0; i < out.size(); ++i) {
      out.bits[i] = out.type == ElementType::float32
                        ? add_bits<float>(out.bits[i], shards[r].bits[i])
                        : add_bits<double>(out.bits[i], shards[r].bits[i]);
    }
  }
  return out;
}

Array same(const std::vector<Array>& shards, const std::string& name,
           std::vector<std::string>& notes) {
  for (std::size_t r = 1; r < shards.size(); ++r) {
    const Array& s = shards[r];
    if (s.type != shards[0].type || s.shape != shards[0].shape || s.bits != shards[0].bits) {
      notes.push_back(
          "'" + name + "': rank " + std::to_string(r) +
          " differs from rank 0 (a replicated tensor, rule 'same'); rank 0's is compared");
    }
  }
  return shards[0];
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

namespace {

// Names compared with runs of digits as numbers. Every digit's byte lies
// between the same two neighbours, so a number and a character compare
// alike whatever the number: a total order.
bool natural_before(std::string_view a, std::string_view b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (is_digit(a[i]) && is_digit(b[j])) {
      std::size_t ei = i, ej = j;
      while (ei < a.size() && is_digit(a[ei])) ++ei;
      while (ej < b.size() && is_digit(b[ej])) ++ej;
      // The numbers' values: without leading zeros, the shorter is smaller.
      std::string_view na = a.substr(i, ei - i), nb = b.substr(j, ej - j);
      na.remove_prefix(std::min(na.find_first_not_of('0'), na.size()));
      nb.remove_prefix(std::min(nb.find_first_not_of('0'), nb.size()));
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ei;
      j = ej;
    } else if (a[i] != b[j]) {
      return a[i] < b[j];
    } else {
      ++i;
      ++j;
    }
  }
  if (a.size() - i != b.size() - j) return a.size() - i < b.size() - j;
  return a < b;  // equal but for leading zeros: any fixed order
}

// "-input." marked with a byte below the digits' ('\x01'), so that a
// module's inputs come before its children's "-<N>." files.
std::string mark_inputs(std::string_view name) {
  std::string out(name);
  for (std::size_t at = out.find("-input."); at != std::string::npos;
       at = out.find("-input.", at + 2)) {
    out.insert(at + 1, 1, '\x01');
  }
  return out;
}

}  // namespace

bool dump_file_before(std::string_view a, std::string_view b) {
  return natural_before(mark_inputs(a), mark_inputs(b));
}

ShardRule parse_shard_rule(const std::string& text) {
  const auto eq = text.rfind('=');
  const auto bad = [&] {
    return std::invalid_argument(
        "shard rule '" + text +
        "': expected PATTERN=concat, PATTERN=concat:D, PATTERN=sum or PATTERN=same");
  };
  if (eq == std::string::npos || eq == 0) throw bad();
  ShardRule r;
  r.pattern = text.substr(0, eq);
  const std::string join = text.substr(eq + 1);
  if (join == "sum") {
    r.join = Join::sum;
  } else if (join == "same") {
    r.join = Join::same;
  } else if (join == "concat") {
    r.join = Join::concat;
  } else if (join.rfind("concat:", 0) == 0) {
    static const std::regex dim(R"(-?\d{1,2})");
    if (!std::regex_match(join.substr(7), dim)) throw bad();
    r.join = Join::concat;
    r.dim = std::stoi(join.substr(7));
  } else {
    throw bad();
  }
  return r;
}

std::string_view name(ShardRule::Join j) {
  switch (j) {
    case Join::concat:
      return "concat";
    case Join::sum:
      return "sum";
    case Join::same:
      return "same";
  }
  return "?";
}

const std::vector<ShardRule>& default_shard_rules() {
  static const std::vector<ShardRule> rules = [] {
    std::vector<ShardRule> r;
    for (const char* p : {"*qkv_proj", "*q_proj", "*k_proj", "*v_proj", "*gate_up_proj",
                          "*gate_proj", "*up_proj", "*self_attn.attn"})
      r.push_back({p, Join::concat, -1});
    r.push_back({"*", Join::same, -1});
    return r;
  }();
  return rules;
}

EngineDump read_engine_dump(const std::filesystem::path& dir,
                            const std::vector<ShardRule>& user_rules) {
  const std::vector<RankDir> ranks = rank_dirs(dir);
  const std::vector<std::string> files = file_names(ranks[0].dir);
  EngineDump out;
  out.ranks = ranks.size();
  for (const auto& r : ranks) {
    if (file_names(r.dir) != files)
      fail_input(r.dir, "holds other files than " + ranks[0].dir.filename().string());
  }
  for (const auto& f : files) {
    std::vector<std::vector<Array>> shards;
    shards.reserve(ranks.size());
    for (const auto& r : ranks) shards.push_back(in_dump_order(r.dir / f));
    const std::string stem = std::filesystem::path(f).stem().string();
    for (std::size_t i = 0; i < shards[0].size(); ++i) {
      // A file of one tensor (one op per file) is named by the file alone.
      const std::string in_file = shards[0][i].name;
      const std::string name = in_file.empty() ? stem : in_file;
      const std::string full = in_file.empty() ? stem : stem + "/" + name;
      std::vector<Array> pieces;
      for (std::size_t r = 0; r < ranks.size(); ++r) {
        if (shards[r].size() != shards[0].size() || shards[r][i].name != in_file)
          fail_input(ranks[r].dir / f, "its tensors are not rank 0's, in rank 0's order");
        pieces.push_back(std::move(shards[r][i]));
      }
      const ShardRule& rule = rule_for(name, user_rules);
      Array joined = rule.join == Join::concat ? concat(pieces, rule.dim, full)
                     : rule.join == Join::sum  ? sum(pieces, full)
                                               : same(pieces, full, out.notes);
      joined.name = full;
      out.tensors.push_back(std::move(joined));
    }
  }
  return out;
}

}  // namespace fplab::bisect
