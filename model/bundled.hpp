// The bundled model, loaded once per process, and a guard that runs the
// forward pass on one OpenMP thread: what experiments, sampling and the
// benchmarks share.
#pragma once

#include <omp.h>

#include "model/transformer.hpp"

namespace fplab::model {

// model_path()'s model ($FPLAB_MODEL or model/data/kjv-char.safetensors),
// loaded on first use. Throws InputError when it cannot be read.
inline const Model& bundled_model() {
  static const Model m = Model::load();
  return m;
}

// While alive, OpenMP runs one thread (restored afterwards). Decoding pushes
// a few rows at a time through a small model: sharing that between threads
// costs more than it saves, badly so on a loaded machine. The bits do not
// depend on the thread count (model/kernels.hpp).
class OneThread {
 public:
  OneThread() : saved_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~OneThread() { omp_set_num_threads(saved_); }
  OneThread(const OneThread&) = delete;
  OneThread& operator=(const OneThread&) = delete;

 private:
  int saved_;
};

}  // namespace fplab::model
