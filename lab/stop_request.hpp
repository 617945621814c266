// A request to stop a run early (SIGINT, SIGTERM), honoured at the next
// progress point.
//
// The program that runs experiments (`fplab run`) installs signal handlers
// that store the signal in `stop_signal_received` (a lock-free atomic, so
// async-signal-safe) and sets `stop_action`. Every RunContext::progress
// call, and the driver between experiments, calls stop_if_requested(): once
// a signal has arrived it calls `stop_action(signal)`, which reports what
// was done and ends the process without returning. Progress points can sit
// inside OpenMP parallel regions, where an exception cannot unwind, hence
// an action that exits rather than a throw. No results are written while
// experiments run, so there is nothing to clean up at that point.
#pragma once

#include <atomic>

namespace fplab {

// The signal that asked the run to stop, or 0.
inline std::atomic<int> stop_signal_received{0};

// Reports and exits; must not return. Null: stop requests are ignored.
using StopAction = void (*)(int signal);
inline std::atomic<StopAction> stop_action{nullptr};

inline void stop_if_requested() {
  const int signal = stop_signal_received.load(std::memory_order_relaxed);
  if (signal == 0) return;
  if (const StopAction action = stop_action.load(); action != nullptr) action(signal);
}

}  // namespace fplab
