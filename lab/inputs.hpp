// Files an experiment reads are inputs of its results, like its parameters:
// each is named by a parameter (its default the bundled file) and recorded
// with the sha256 of its bytes (reports/results.hpp's InputFile), so that
// results.json's context names it and the fingerprint changes when it does.
#pragma once

#include <filesystem>
#include <string>

#include "reports/results.hpp"

namespace fplab {

// The sha256 of the file's bytes, 64 lower-case hex digits. Throws
// InputError naming the file when it cannot be read.
std::string file_sha256(const std::filesystem::path& path);

// Adds {role, path, file_sha256(path)} to the record's inputs.
void record_input(ExperimentRecord& out, std::string role, const std::filesystem::path& path);

}  // namespace fplab
