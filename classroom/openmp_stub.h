/* The WebAssembly build's OpenMP: none. Debian 12's emscripten has no
   OpenMP runtime; the classroom page runs one thread, so the library's
   `#pragma omp` loops (ignored by em++) run serially and these answer as a
   one-thread team would. classroom/CMakeLists.txt copies it into the
   page's own include folder as omp.h; nothing else sees it. */
#pragma once
static inline int omp_get_max_threads(void) { return 1; }
static inline int omp_get_num_threads(void) { return 1; }
static inline int omp_get_thread_num(void) { return 0; }
static inline void omp_set_num_threads(int n) { (void)n; }
