// The bundled model, loaded once per process, and a guard that runs the
// forward pass on one OpenMP thread: what experiments, sampling and the
// benchmarks share.
#pragma once

#include <omp.h>

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "model/transformer.hpp"

namespace fplab::model {

// The file a model spelling names: "bundled" is model_path() ($FPLAB_MODEL
// when set, else model/data/kjv-char.safetensors); anything else is a path
// (kBundledMoeSpec, "bundled-moe", too: Model::load reads it as that spec).
inline std::filesystem::path model_file(const std::string& spec) {
  return spec == "bundled" ? model_path() : std::filesystem::path(spec);
}

// The model model_file(spec) names, loaded on first use and kept for the
// process (one copy per file). Throws InputError when it cannot be read.
inline const Model& load_model(const std::string& spec) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<const Model>> loaded;
  const std::filesystem::path file = model_file(spec);
  const std::lock_guard<std::mutex> lock(mutex);
  auto& slot = loaded[file.string()];
  if (!slot) slot = std::make_unique<const Model>(Model::load(file));
  return *slot;
}

// model_path()'s model, loaded on first use.
inline const Model& bundled_model() { return load_model("bundled"); }

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
