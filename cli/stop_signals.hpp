// SIGINT and SIGTERM as stop requests (lab/stop_request.hpp) for the
// commands that keep what they found when stopped (fplab run, fplab
// bisect).
#pragma once

namespace fplab::cli {

// Sets `action` as the stop action, then makes SIGINT and SIGTERM record a
// stop request (a second one kills at once: SA_RESETHAND). A SIGINT ignored
// by the parent (a background job) stays ignored. SIGXFSZ is ignored: a
// file size limit is a write error like a full disk. Call it first in a
// command's callback, before any work, with a StopWatcher alive from then
// on, so that a request is honoured from the command's first instant.
void install_stop_handlers(void (*action)(int signal));

// "SIGINT", "SIGTERM" or "a signal".
const char* signal_name(int signal);

}  // namespace fplab::cli
