// What a running experiment can ask of the driver: whether it runs --quick,
// its seed, and a progress line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace fplab {

class RunContext {
 public:
  RunContext(std::string id, bool quick, std::uint64_t seed, bool show_progress)
      : id_(std::move(id)), quick_(quick), seed_(seed), show_progress_(show_progress) {}
  [[nodiscard]] bool quick() const { return quick_; }
  [[nodiscard]] std::uint64_t seed() const { return seed_; }
  // Reports progress on stderr, only when it is a terminal; cheap to call
  // often (prints only when the whole percentage changes). Every long loop
  // of every experiment passes through here, and a stop request is
  // honoured here (and, between progress calls, by the driver's
  // StopWatcher: lab/stop_request.hpp).
  void progress(std::uint64_t done, std::uint64_t total, std::string_view what = {});
  void finish_progress();

 private:
  std::string id_;
  bool quick_;
  std::uint64_t seed_;
  bool show_progress_;
  int last_percent_ = -1;
  bool printed_ = false;
};

}  // namespace fplab
