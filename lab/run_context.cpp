#include "lab/run_context.hpp"

#include <cstdio>

#include "lab/stop_request.hpp"

namespace fplab {

void RunContext::progress(std::uint64_t done, std::uint64_t total, std::string_view what) {
  stop_if_requested();  // lab/stop_request.hpp: SIGINT/SIGTERM stop here
  if (!show_progress_ || total == 0) return;
  const int percent =
      static_cast<int>(100.0 * static_cast<double>(done) / static_cast<double>(total));
  if (percent == last_percent_) return;
  last_percent_ = percent;
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
