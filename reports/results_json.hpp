// results.json, the file form of reports/results.hpp's records
// (docs/results-format.md): writing a Results as JSON, with or without its
// fingerprint, and reading one back with every error naming the object and
// the field ("results.json: experiment 'x' table 'y': ...").
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "reports/results.hpp"

namespace fplab {

// With its "fingerprint" field.
nlohmann::json to_json(const Results& r);
// Throws std::invalid_argument with a one-line message on a malformed file,
// an unsupported schema version or a fingerprint that does not match.
Results results_from_json(const nlohmann::json& j);

// The text of results.json, with its fingerprint; written through a
// temporary and a rename (io/atomic_file.hpp).
std::string results_json_text(const Results& r);
void write_results_json(const Results& r, const std::string& path);
// Reads and checks a results file; InputError names the path.
Results read_results_json(const std::string& path);

// The same without sha256: the fingerprint functions above live in
// results_fingerprint.cpp (OpenSSL), these in results_json.cpp, so that a
// producer built without OpenSSL (the platform probes of platforms/, for
// cross targets) links the model and writes files whose fingerprint fplab
// computes on reading (the field is optional).
nlohmann::json to_json_without_fingerprint(const Results& r);
void write_results_json_without_fingerprint(const Results& r, const std::string& path);
// Parses without checking a "fingerprint" field (only that it is a string).
Results results_from_json_unchecked(const nlohmann::json& j);
// The JSON of a file; InputError when it cannot be read or is not JSON.
nlohmann::json parse_results_file(const std::string& path);

}  // namespace fplab
