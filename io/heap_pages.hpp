// Keeps freed memory in the heap while a computation makes and frees large
// buffers again and again. Placement only: no value changes (every result
// is the same bits).
//
// glibc serves a block of 128 KiB or more with mmap and unmaps it on free,
// so a buffer made afresh faults every page in again. Two users:
// - bisect's searches (bisect/bisect_report.cpp): each test of the ranking
//   and the minimal fix decodes the request afresh under both settings, a
//   new model::Batch per decode, whose logits buffer alone is rows x
//   vocabulary floats (49 MB for a batch of 8 x 12 tokens over Mixtral's
//   128,256 entries); on the Mixtral fixture (op-localisation, search=all)
//   two thirds of the CPU time was the zeroing of fresh pages and their
//   faults (perf).
// - the enumeration's MPI ranks (mpi/enumerate_worker.cpp): levels are
//   vectors of tens of MB, made and freed once per level; kept, their pages
//   are faulted in once per job rather than once per level (the faults were
//   a fifth of a rank's CPU, in the kernel).
// With mmap off and no trimming, a freed buffer's pages are reused by the
// next one.
//
// While a KeepHeapPages lives: mallopt M_MMAP_MAX 0 and M_TRIM_THRESHOLD at
// its largest; after it, glibc's defaults again (M_MMAP_MAX 65,536,
// M_TRIM_THRESHOLD 128 KiB; the dynamic mmap threshold stays off) and
// malloc_trim(0) gives the kept pages back. Process-wide: not to be nested
// or used from two threads at once.
#pragma once

#include <malloc.h>

#include <limits>

namespace fplab {

class KeepHeapPages {
 public:
  KeepHeapPages() {
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
  }
  ~KeepHeapPages() {
    mallopt(M_MMAP_MAX, 65536);
    mallopt(M_TRIM_THRESHOLD, 128 * 1024);
    malloc_trim(0);
  }
  KeepHeapPages(const KeepHeapPages&) = delete;
  KeepHeapPages& operator=(const KeepHeapPages&) = delete;
};

}  // namespace fplab
