// A request to stop a run early (SIGINT, SIGTERM), honoured at the next
// progress point or, while a StopWatcher lives, within 50 ms.
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
//
// Progress points alone can be minutes apart: one greedy decode of a 0.5B
// model is a minute of forward passes with no progress call inside. So the
// driver keeps a StopWatcher alive while experiments run: a thread that
// calls stop_if_requested() every 50 ms, so the action runs (and exits the
// process) from that thread whatever the experiment is doing. Only the
// first thread to see a request runs the action; any other that sees it
// meanwhile waits for the exit.
#pragma once

#include <atomic>
#include <chrono>
#include <stop_token>
#include <thread>

namespace fplab {

// The signal that asked the run to stop, or 0.
inline std::atomic<int> stop_signal_received{0};

// Reports and exits; must not return. Null: stop requests are ignored.
using StopAction = void (*)(int signal);
inline std::atomic<StopAction> stop_action{nullptr};

inline void stop_if_requested() {
  const int signal = stop_signal_received.load(std::memory_order_relaxed);
  if (signal == 0) return;
  const StopAction action = stop_action.load();
  if (action == nullptr) return;
  static std::atomic<bool> acting{false};
  if (acting.exchange(true)) {
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));  // the first one exits
  }
  action(signal);
}

// While alive, a thread calls stop_if_requested() every 50 ms.
class StopWatcher {
 public:
  StopWatcher()
      : thread_([](const std::stop_token& done) {
          while (!done.stop_requested()) {
            stop_if_requested();
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
          }
        }) {}

 private:
  std::jthread thread_;  // asks the thread to finish and joins it on destruction
};

}  // namespace fplab
