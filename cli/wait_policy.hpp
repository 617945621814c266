// How fplab's OpenMP threads wait for work: passively, unless the user chose.
//
// libgomp (the OpenMP runtime of the forward pass, and of OpenBLAS's OpenMP
// build, which shares it) spins a waiting thread for about 300,000
// iterations before it sleeps (OMP_WAIT_POLICY unset). On a machine whose
// other cores are busy, the spinning thread takes the core from the work it
// waits for: `fplab generate -n 8` on a SmolLM2-135M-shaped checkpoint took
// 10.1 s where OMP_WAIT_POLICY=passive took 0.63 s (docs/bench.md has the
// measurement that chose this). libgomp reads its environment once, when it
// is loaded, before main() runs, so setting the variable in main() is too
// late: the program is started again with it set.
#pragma once

#include <string>

namespace fplab::cli {

// At the top of main(): when neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is
// set, sets OMP_WAIT_POLICY=passive and replaces this process by the same
// program with the same arguments (execv of /proc/self/exe); returns only
// when a variable was set already (the user's choice is kept) or the exec
// failed (the program then runs with libgomp's default). The child programs
// fplab starts (mpirun's ranks, `run --jobs`' workers) inherit the setting.
void use_passive_wait_policy(char** argv);

// What the OpenMP runtime read when this process was started (its initial
// environment, /proc/self/environ, not a later setenv): e.g.
// "OMP_WAIT_POLICY=passive (fplab's default; set OMP_WAIT_POLICY or
// GOMP_SPINCOUNT to choose)" or "OMP_WAIT_POLICY=active (yours)".
std::string wait_policy_description();

}  // namespace fplab::cli
