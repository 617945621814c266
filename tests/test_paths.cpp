// The paths test_paths.hpp declares, from the build's -D flags on this file.
#include "test_paths.hpp"

namespace fplab::test {
const char kSourceDir[] = FPLAB_PATH_SOURCE_DIR;
const char kBinary[] = FPLAB_PATH_BINARY;
const char kCheckpointFixtures[] = FPLAB_PATH_CHECKPOINT_FIXTURES;
}  // namespace fplab::test
