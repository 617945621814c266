// The lab's own data files (the bundled model, the experiments' fixtures),
// found the same way from the build tree and from an installed package.
//
// data_file("model/data/kjv-char.safetensors") is
//   <program dir>/../share/fplab/model/data/kjv-char.safetensors
// when the running program is an installed one (that file exists beside it:
// the Debian package installs the data under /usr/share/fplab, keeping the
// source tree's relative paths), else
//   <source dir>/model/data/kjv-char.safetensors
// (the build tree's program reads the checkout it was built from). The
// program's directory comes from /proc/self/exe; where that cannot be read
// the source tree is used. Nothing is opened here: a missing file is the
// reader's one-line error, naming the path returned.
#pragma once

#include <filesystem>
#include <string_view>

namespace fplab {

// `relative`: a path relative to the source tree's root.
std::filesystem::path data_file(std::string_view relative);

}  // namespace fplab
