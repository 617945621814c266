// The .npy reader: round trips, and clear errors for damaged files.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "io/npy.hpp"
#include "io/numbers.hpp"
#include "test_support.hpp"

using fplab::test::slurp;

namespace {
std::filesystem::path npy_file(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / "fplab-test-npy";
  std::filesystem::create_directories(dir);
  return dir / name;
}
}  // namespace

TEST_CASE("npy round trip", "[npy]") {
  const std::vector<double> x{0.1, -0.0, 1e300, 5e-324};
  const auto p = npy_file("rt.npy");
  fplab::write_npy(p, std::span<const double>(x));
  const auto back = std::get<std::vector<double>>(fplab::read_npy(p));
  REQUIRE(back.size() == x.size());
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(fplab::to_hex(back[i]) == fplab::to_hex(x[i]));
  const std::vector<float> empty;
  fplab::write_npy(p, std::span<const float>(empty));
  CHECK(std::get<std::vector<float>>(fplab::read_npy(p)).empty());
}

TEST_CASE("npy: truncated, corrupt or unsupported files are rejected", "[npy]") {
  const std::vector<float> x(100, 1.5f);
  const auto good = npy_file("good.npy");
  fplab::write_npy(good, std::span<const float>(x));
  const std::string bytes = slurp(good);
  const auto damaged = npy_file("damaged.npy");
  const auto write = [&](const std::string& content) {
    std::ofstream(damaged, std::ios::binary) << content;
  };

  write(bytes.substr(0, bytes.size() - 1));
  CHECK_THROWS_WITH(fplab::read_npy(damaged), Catch::Contains("truncated"));
  write(bytes.substr(0, 20));
  CHECK_THROWS_WITH(fplab::read_npy(damaged), Catch::Contains("truncated header"));
  write(bytes + "xx");
  CHECK_THROWS_WITH(fplab::read_npy(damaged), Catch::Contains("trailing"));
  write("garbage");
  CHECK_THROWS_WITH(fplab::read_npy(damaged), Catch::Contains("bad magic"));
  std::string other = bytes;
  other.replace(other.find("<f4"), 3, "<i4");
  write(other);
  CHECK_THROWS_WITH(fplab::read_npy(damaged), Catch::Contains("unsupported dtype"));
  other = bytes;
  other.replace(other.find("False"), 5, "Maybe");
  write(other);
  CHECK_THROWS_WITH(fplab::read_npy(damaged), Catch::Contains("malformed"));
  other = bytes;
  other.replace(other.find("(100,)"), 6, "(5,20)");
  write(other);
  CHECK_THROWS_WITH(fplab::read_npy(damaged), Catch::Contains("1-D"));
  CHECK_THROWS_AS(fplab::read_npy(npy_file("missing.npy")), fplab::InputError);
}

TEST_CASE("numbers parse exactly, straight to the target type", "[numbers]") {
  CHECK(fplab::parse_number<double>("0.1") == 0.1);
  CHECK(fplab::parse_number<float>("0.1") == 0.1f);
  CHECK(fplab::parse_number<double>("-0x1.8p-3") == -0.1875);
  CHECK(fplab::parse_number<double>("+2") == 2.0);
  CHECK(std::isinf(fplab::parse_number<double>("-inf")));
  CHECK(std::isnan(fplab::parse_number<float>("nan")));
  // 1 + 2^-24 + 2^-60 written in decimal: rounds up as float directly,
  // but to 1 if it went through double first.
  CHECK(fplab::parse_number<float>("1.00000005960464477539930054151") ==
        std::nextafter(1.0f, 2.0f));
  for (const char* bad : {"", "abc", "1.0x", "--1", "0x", "1e99999"}) {
    INFO(bad);
    CHECK_THROWS_AS(fplab::parse_number<double>(bad), fplab::InputError);
  }
  CHECK(fplab::to_hex(0.1) == "0x1.999999999999ap-4");
  CHECK(fplab::to_decimal(0.1f) == "0.1");
}
