#include "io/text_columns.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "io/numbers.hpp"

namespace fplab {

namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  if (line.find(',') != std::string::npos) {
    std::stringstream ss(line);
    std::string f;
    while (std::getline(ss, f, ',')) out.push_back(trim(f));
    if (!line.empty() && line.back() == ',') out.emplace_back();
  } else {
    std::istringstream words(line);
    std::string w;
    while (words >> w) out.push_back(w);
  }
  return out;
}

bool is_number(const std::string& s) {
  try {
    (void)parse_number<double>(s);
    return true;
  } catch (const InputError&) {
    return false;
  }
}

}  // namespace

std::vector<Array> read_text_columns(const std::filesystem::path& path, ElementType type) {
  if (type != ElementType::float32 && type != ElementType::float64) {
    throw InputError(path.string() + ": text numbers are read as float32 or float64");
  }
  std::ifstream in(path);
  if (!in) throw InputError(path.string() + ": cannot open");
  std::vector<Array> columns;
  bool first_row = true;
  bool header = false;
  std::string line;
  for (std::size_t line_no = 1; std::getline(in, line); ++line_no) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    if (trim(line).empty()) continue;
    const auto row = fields(line);
    const std::string where = path.string() + ":" + std::to_string(line_no) + ": ";
    if (first_row) {
      first_row = false;
      columns.resize(row.size());
      for (const auto& f : row) header = header || !is_number(f);
      for (std::size_t c = 0; c < row.size(); ++c) {
        columns[c].type = type;
        columns[c].name = header ? row[c] : "column " + std::to_string(c + 1);
        if (header && row[c].empty()) throw InputError(where + "empty column name");
      }
      if (header) continue;
    }
    if (row.size() != columns.size()) {
      throw InputError(where + std::to_string(row.size()) + " fields, expected " +
                       std::to_string(columns.size()));
    }
    for (std::size_t c = 0; c < row.size(); ++c) {
      try {
        if (type == ElementType::float32) {
          columns[c].bits.push_back(std::bit_cast<std::uint32_t>(parse_number<float>(row[c])));
        } else {
          columns[c].bits.push_back(std::bit_cast<std::uint64_t>(parse_number<double>(row[c])));
        }
      } catch (const InputError& e) {
        throw InputError(where + "column '" + columns[c].name + "': " + e.what());
      }
    }
  }
  if (in.bad()) throw InputError(path.string() + ": read error");
  if (columns.empty()) throw InputError(path.string() + ": no numbers");
  for (auto& c : columns) c.shape = {c.bits.size()};
  if (header) return columns;
  // No header: one array, 1-D for one column, else rows x columns (row-major).
  Array matrix;
  matrix.type = type;
  const std::size_t rows = columns[0].bits.size();
  matrix.shape = columns.size() == 1 ? std::vector<std::size_t>{rows}
                                     : std::vector<std::size_t>{rows, columns.size()};
  matrix.bits.reserve(rows * columns.size());
  for (std::size_t r = 0; r < rows; ++r) {
    for (const auto& c : columns) matrix.bits.push_back(c.bits[r]);
  }
  return {std::move(matrix)};
}

bool text_columns_have_header(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path.string() + ": cannot open");
  std::string line;
  while (std::getline(in, line)) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    if (trim(line).empty()) continue;
    const auto row = fields(line);
    return std::any_of(row.begin(), row.end(), [](const std::string& f) { return !is_number(f); });
  }
  return false;
}

bool text_columns_look_float32(const std::filesystem::path& path) {
  const auto as32 = read_text_columns(path, ElementType::float32);
  const auto as64 = read_text_columns(path, ElementType::float64);
  for (std::size_t c = 0; c < as64.size(); ++c) {
    for (std::size_t i = 0; i < as64[c].size(); ++i) {
      const auto f = std::bit_cast<float>(static_cast<std::uint32_t>(as32[c].bits[i]));
      const auto d = std::bit_cast<double>(as64[c].bits[i]);
      if (std::isnan(f) && std::isnan(d)) continue;
      if (static_cast<double>(f) == d) continue;
      // At most 9 significant digits: float32's shortest decimal or %.9g.
      if (parse_number<double>(fmt::format("{:.9g}", d)) != d) return false;
    }
  }
  return true;
}

}  // namespace fplab
