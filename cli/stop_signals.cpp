#include "cli/stop_signals.hpp"

#include <csignal>

#include "lab/stop_request.hpp"

namespace fplab::cli {

namespace {

extern "C" void record_stop_signal(int signal) {
  stop_signal_received.store(signal, std::memory_order_relaxed);
}

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

bool recording = false;  // record_stop_requests' handlers are installed

// SIGINT and SIGTERM's action: `handler`, or SIG_DFL when null (SA_RESETHAND
// with a handler). An ignored SIGINT (a background job) stays ignored.
void set_stop_action(void (*handler)(int)) {
  struct sigaction action {};
  action.sa_handler = handler != nullptr ? handler : SIG_DFL;
  sigemptyset(&action.sa_mask);
  action.sa_flags = handler != nullptr ? SA_RESETHAND | SA_RESTART : 0;
  for (const int signal : {SIGINT, SIGTERM}) {
    struct sigaction old {};
    sigaction(signal, nullptr, &old);
    if (signal == SIGINT && old.sa_handler == SIG_IGN) continue;
    sigaction(signal, &action, nullptr);
  }
}

}  // namespace

void hold_stop_signals() {
  const sigset_t set = stop_signals();
  sigprocmask(SIG_BLOCK, &set, nullptr);
}

void record_stop_requests() {
  set_stop_action(record_stop_signal);
  recording = true;
  std::signal(SIGXFSZ, SIG_IGN);
  const sigset_t set = stop_signals();
  sigprocmask(SIG_UNBLOCK, &set, nullptr);
}

void default_stop_signals() {
  set_stop_action(nullptr);
  recording = false;
  raise_unhandled_stop();
}

void install_stop_handlers(void (*action)(int signal)) {
  stop_action.store(action);
  if (!recording) record_stop_requests();
}

void raise_unhandled_stop() {
  const int signal = stop_signal_received.load();
  if (signal == 0 || stop_action.load() != nullptr) return;
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

const char* signal_name(int signal) {
  return signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "a signal";
}

}  // namespace fplab::cli
