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
  // Reports progress on stderr: on a terminal (show_progress) one line
  // redrawn when the whole percentage changes; otherwise a line
  // "fplab: ID: WHAT P%" when the percentage changed and a line is due
  // (lab/progress_pace.hpp: every 10 s at most). Cheap to call often. Every long loop
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
