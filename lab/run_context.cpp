#include "lab/run_context.hpp"

#include <cstdio>

#include "lab/progress_pace.hpp"
#include "lab/stop_request.hpp"

namespace fplab {

void RunContext::progress(std::uint64_t done, std::uint64_t total, std::string_view what) {
  stop_if_requested();  // lab/stop_request.hpp: SIGINT/SIGTERM stop here
  if (total == 0) return;
  const int percent =
      static_cast<int>(100.0 * static_cast<double>(done) / static_cast<double>(total));
  if (percent == last_percent_) return;
  last_percent_ = percent;
  if (!show_progress_) {  // not a terminal: whole lines, paced (lab/progress_pace.hpp)
    if (!progress_line_due()) return;
    std::fprintf(stderr, "fplab: %s: %.*s %d%%\n", id_.c_str(), static_cast<int>(what.size()),
                 what.data(), percent);
    std::fflush(stderr);
    return;
  }
  std::fprintf(stderr, "\r  %s: %.*s %3d%%   ", id_.c_str(), static_cast<int>(what.size()),
               what.data(), percent);
  std::fflush(stderr);
  printed_ = true;
}

void RunContext::finish_progress() {
  if (printed_) std::fprintf(stderr, "\r%60s\r", "");
  printed_ = false;
  last_percent_ = -1;
}

}  // namespace fplab
