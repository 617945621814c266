// The array goldens numpy wrote (tools/make_array_golden.py): the files in
// tests/golden/arrays and golden.json, what numpy says about them.
#pragma once

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace fplab::test {

inline const std::filesystem::path kGolden =
    std::filesystem::path(FPLAB_SOURCE_DIR) / "tests/golden/arrays";

inline nlohmann::json golden() {
  std::ifstream in(kGolden / "golden.json");
  return nlohmann::json::parse(in);
}

}  // namespace fplab::test
