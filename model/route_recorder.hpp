// What a Mixture-of-Experts forward pass decided, per row and layer: an
// OpObserver (model/transformer.hpp) that keeps, for the last pass, each
// sparse layer's route (the k experts, sorted by id: the set, not the
// rank), the router's logits (the float32 values the route was chosen from)
// and the layer's output (its mlp_residual: the next layer's input). What
// the router-flips experiment compares between a request alone and in a
// batch. Observing changes no bit of the pass.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "model/forward_ops.hpp"
#include "model/transformer.hpp"

namespace fplab::model {

// One row's record at one layer (route and router empty on a dense layer).
struct LayerRecord {
  std::vector<std::size_t> experts;  // the route's experts, ascending id
  std::vector<float> router;         // the router's logits (n_experts)
  std::vector<float> output;         // the layer's output (d_model)
};

class RouteRecorder final : public OpObserver {
 public:
  explicit RouteRecorder(std::size_t layers) : layers_(layers) {}

  // rows()[r][L]: row r of the last pass (batch.row_sequence(r),
  // row_position(r) say whose), layer L.
  [[nodiscard]] const std::vector<std::vector<LayerRecord>>& rows() const { return rows_; }

  void observe(std::size_t op, std::span<const float> out, const Batch& batch) override {
    const Op& o = batch.ops()[op];
    if (o.kind == OpKind::embed) rows_.assign(batch.rows(), std::vector<LayerRecord>(layers_));
    if (o.layer == kNoLayer || o.layer >= layers_) return;
    const bool router = o.kind == OpKind::router;
    const bool output = o.name == "layers." + std::to_string(o.layer) + ".mlp_residual";
    if (!router && !output) return;
    for (std::size_t r = 0; r < batch.rows(); ++r) {
      LayerRecord& rec = rows_[r][o.layer];
      const auto row = out.subspan(r * o.width(), o.width());
      if (output) {
        rec.output.assign(row.begin(), row.end());
        continue;
      }
      rec.router.assign(row.begin(), row.end());
      const auto e = batch.route_experts(r);
      rec.experts.assign(e.begin(), e.end());
      std::sort(rec.experts.begin(), rec.experts.end());
    }
  }

 private:
  std::size_t layers_;
  std::vector<std::vector<LayerRecord>> rows_;
};

}  // namespace fplab::model
