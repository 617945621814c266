// The fingerprint of a results file and everything that writes or checks
// it (reports/results.hpp). Apart from results_json.cpp because it needs sha256
// (io/sha256.hpp, OpenSSL): a program without OpenSSL links results_json.cpp
// alone and writes files without a fingerprint (the platform probes,
// platforms/CMakeLists.txt), which fplab computes when it reads them.
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "io/atomic_file.hpp"
#include "io/input_error.hpp"
#include "io/sha256.hpp"
#include "reports/results_json.hpp"

namespace fplab {

using nlohmann::json;

std::string fingerprint(const Results& r) {
  Sha256 h;
  const auto line = [&h](const std::string& a, std::string_view b, const std::string& c) {
    h.update(a);
    h.update("\t");
    h.update(b);
    h.update("\t");
    h.update(c);
    h.update("\n");
  };
  for (const auto& e : r.experiments) {
    for (const auto& p : e.parameters) line(e.id + "/parameters/" + p.name, p.type, p.value);
    for (const auto& f : e.inputs) line(e.id + "/inputs/" + f.role, "sha256", f.sha256);
  }
  for (const auto& [path, v] : flatten(r)) line(path, name(v.type()), v.hex());
  for (const auto& e : r.experiments) {
    for (const auto& v : e.verdicts) {
      const std::string base = e.id + "/verdicts/" + v.claim;
      line(base + "/ours", "text", v.ours);
      line(base + "/claimed", "text", v.claimed);
      line(base + "/status", "text", std::string(name(v.status)));
    }
  }
  return h.hex_digest();
}

json to_json(const Results& r) {
  json out = to_json_without_fingerprint(r);
  out["fingerprint"] = fingerprint(r);
  return out;
}

Results results_from_json(const json& j) {
  Results r = results_from_json_unchecked(j);
  // The fingerprint is optional: fplab computes it. When present it must
  // match, over the canonical form of every value (so the spelling of a
  // hex float does not matter, its bits do).
  if (j.contains("fingerprint")) {
    const auto stored = j["fingerprint"].get<std::string>();  // a string: checked above
    if (stored != fingerprint(r)) {
      throw std::invalid_argument("results.json: fingerprint " + stored +
                                  " does not match the contents (" + fingerprint(r) +
                                  "); if the file was edited on purpose, delete its "
                                  "\"fingerprint\" field");
    }
  }
  return r;
}

std::string results_json_text(const Results& r) { return to_json(r).dump(1) + "\n"; }

void write_results_json(const Results& r, const std::string& path) {
  write_file_atomically(path, results_json_text(r));
}

Results read_results_json(const std::string& path) {
  const json j = parse_results_file(path);
  try {
    return results_from_json(j);
  } catch (const std::invalid_argument& e) {
    throw InputError(path + ": " + e.what());
  }
}

}  // namespace fplab
