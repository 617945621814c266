// Thrown by work that finished but must end the program with a status of
// its own (fplab diff: 1 = drift; a run stopped by a signal: 128 + signal):
// `fplab` returns `code` (cli/main.cpp). Here, below cli/, so that the
// worker pool (lab/run_workers.hpp) passes it on from a worker process.
#pragma once

namespace fplab {

struct ExitStatus {
  int code;
};

}  // namespace fplab
