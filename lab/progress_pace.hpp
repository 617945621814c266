// The pace of progress lines on a stderr that is not a terminal (a pipe, a
// CI log): one line at most every $FPLAB_PROGRESS_SECONDS seconds (default
// 10; 0: a line at every progress point), counted over the whole process
// from its first call. On a terminal, progress redraws one line instead
// (lab/run_context.hpp) and is not paced.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>

namespace fplab {

// The interval, read once: $FPLAB_PROGRESS_SECONDS when it is a number of
// seconds from 0 to 86400, else 10.
inline double progress_interval_seconds() {
  static const double seconds = [] {
    const char* text = std::getenv("FPLAB_PROGRESS_SECONDS");
    if (text == nullptr) return 10.0;
    char* end = nullptr;
    const double s = std::strtod(text, &end);
    return (end != text && *end == '\0' && s >= 0 && s <= 86400) ? s : 10.0;
  }();
  return seconds;
}

// True when a progress line may be printed now (and then counts it as
// printed): the interval has passed since the last line, or since the
// first call when none was printed. Thread-safe.
inline bool progress_line_due() {
  using Clock = std::chrono::steady_clock;
  static const Clock::time_point start = Clock::now();
  static std::atomic<double> last{0.0};  // seconds after start
  const double now = std::chrono::duration<double>(Clock::now() - start).count();
  double previous = last.load();
  const double interval = progress_interval_seconds();
  while (interval == 0 || now - previous >= interval) {
    if (last.compare_exchange_weak(previous, now)) return true;
  }
  return false;
}

}  // namespace fplab
