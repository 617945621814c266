// Keeps freed memory in the heap while bisect's searches run.
//
// Each test of the ranking and the minimal fix decodes the request afresh
// under both settings: a new model::Batch per decode, whose logits buffer
// alone is rows x vocabulary floats (49 MB for a batch of 8 x 12 tokens
// over Mixtral's 128,256 entries). glibc serves a block that large with
// mmap and unmaps it on free, so every decode faulted every page in again:
// on the Mixtral fixture (op-localisation, search=all) two thirds of the
// CPU time was the zeroing of fresh pages and their faults (perf). With
// mmap off and no trimming, a freed buffer's pages are reused by the next
// decode. Placement only: no value changes (every result is the same bits).
//
// While a KeepHeapPages lives: mallopt M_MMAP_MAX 0 and M_TRIM_THRESHOLD at
// its largest; after it, glibc's defaults again (M_MMAP_MAX 65,536,
// M_TRIM_THRESHOLD 128 KiB; the dynamic mmap threshold stays off) and
// malloc_trim(0) gives the kept pages back. Process-wide: not to be nested
// or used from two threads at once.
#pragma once

#include <malloc.h>

#include <limits>

namespace fplab::bisect {

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

}  // namespace fplab::bisect
