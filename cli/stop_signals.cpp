#include "cli/stop_signals.hpp"

#include <csignal>

#include "lab/stop_request.hpp"

namespace fplab::cli {

namespace {

extern "C" void record_stop_signal(int signal) {
  stop_signal_received.store(signal, std::memory_order_relaxed);
}

}  // namespace

void install_stop_handlers(void (*action)(int signal)) {
  stop_action.store(action);
  struct sigaction record {};
  record.sa_handler = record_stop_signal;
  sigemptyset(&record.sa_mask);
  record.sa_flags = SA_RESETHAND | SA_RESTART;
  for (const int signal : {SIGINT, SIGTERM}) {
    struct sigaction old {};
    sigaction(signal, nullptr, &old);
    if (signal == SIGINT && old.sa_handler == SIG_IGN) continue;
    sigaction(signal, &record, nullptr);
  }
  std::signal(SIGXFSZ, SIG_IGN);
}

const char* signal_name(int signal) {
  return signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "a signal";
}

}  // namespace fplab::cli
