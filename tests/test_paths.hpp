// Where the tests find the source tree, the fplab program and the checkpoint
// fixtures: this build's absolute paths, compiled into test_paths.cpp alone
// (the fplab_test_paths library, tests/CMakeLists.txt). Every test file sees
// this header through -include, and the macros FPLAB_SOURCE_DIR,
// FPLAB_BINARY and FPLAB_CHECKPOINT_FIXTURES name these arrays. So a test
// file's object holds no path of the build, and ccache serves it to a clone
// in another folder (.ci/run): a path in a -D flag is part of ccache's key.
// The arrays are constant-initialised: a test's namespace-scope object may
// read them in its dynamic initialiser.
#pragma once

namespace fplab::test {
extern const char kSourceDir[];           // the source tree (PROJECT_SOURCE_DIR)
extern const char kBinary[];              // the fplab program this build makes
extern const char kCheckpointFixtures[];  // <build>/tests/checkpoint-fixtures
}  // namespace fplab::test
