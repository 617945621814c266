// Does Eigen give a row other bits alone than inside a batch? For each of
// the model's weight matrices W, row 0 of X W^T is computed by Eigen (as the
// library policy does: kernels::linear_eigen) with X holding just that row,
// and again with X holding `batch` rows; the outputs that differ are
// counted. X's rows are the model's embedding rows of a fixed token string
// (after RMSNorm's scale they are typical layer inputs; here unscaled).
#pragma once

#include <cstddef>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "model/transformer.hpp"

namespace fplab::model {

struct EigenProbe {
  std::string matrix;  // e.g. "layers.0.mlp.down_proj"
  std::size_t out_features = 0;
  std::size_t in_features = 0;
  std::size_t batch = 0;
  std::size_t differing = 0;  // outputs of row 0 whose bits differ
  double max_abs_diff = 0;
};

std::vector<EigenProbe> probe_eigen_batch_variance(const Model& model,
                                                   std::span<const std::size_t> batches);

void print_eigen_probes(std::ostream& out, std::span<const EigenProbe> rows);

}  // namespace fplab::model
