// SIGINT and SIGTERM as stop requests (lab/stop_request.hpp) for the
// commands that keep what they found when stopped (fplab run, fplab
// bisect, fplab generate), from the first instant of the process:
//
//   main:  hold_stop_signals()             first, before anything else
//          use_passive_wait_policy(argv)   may execute fplab again: a held
//                                          signal stays pending through execve
//          record_stop_requests()          a signal now records a request
//   each command that does not keep what it found, when CLI11 picks it:
//          default_stop_signals()          back to dying of the signal
//   each command that does, first in its callback:
//          install_stop_handlers(action)   a request (one recorded before
//                                          included) runs `action`
//
// So a SIGTERM sent while fplab starts, parses its command line or loads
// a model is acted on like one sent later, never a bare death by signal.
#pragma once

namespace fplab::cli {

// Blocks SIGINT and SIGTERM in this thread (the process's only one yet): a
// signal sent now waits, pending, for record_stop_requests.
void hold_stop_signals();

// Makes SIGINT and SIGTERM record a stop request (a second one kills at
// once: SA_RESETHAND), then unblocks them (a pending one is recorded now).
// A SIGINT ignored by the parent (a background job) stays ignored.
// SIGXFSZ is ignored: a file size limit is a write error like a full disk.
void record_stop_requests();

// For a command that has no stop action: SIGINT and SIGTERM back to their
// default action (an ignored SIGINT stays ignored); a request already
// recorded is raised again now, ending the process as the signal would have.
void default_stop_signals();

// Sets `action` as the stop action (record_stop_requests' handlers are
// installed if they were not). Call it first in a command's callback,
// before any work, with a StopWatcher alive from then on and
// stop_if_requested() called before the first long step (a model's
// loading), so that a request is honoured from the command's first instant.
void install_stop_handlers(void (*action)(int signal));

// A request recorded and never acted on (a command that ended without
// installing an action): raised again with the default action. Call on
// the way out of main.
void raise_unhandled_stop();

// "SIGINT", "SIGTERM" or "a signal".
const char* signal_name(int signal);

}  // namespace fplab::cli
