// PhaseProfile: where one enumeration's CPU goes in the level programme
// (reductions/order_levels.cpp), by phase. Off unless the environment has
// FPLAB_ORDERS_PROFILE; then each enumeration prints one line to stderr:
// `orders profile rank R/P: cpu s plan ... build ... exchange ... index ...
// walk ...; levels L, words built B of H, walk starts S`. The seconds are
// CLOCK_PROCESS_CPUTIME_ID (the whole process, all its threads), so the
// phases must not overlap. Internal to reductions/.
#pragma once

#include <array>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "reductions/orders.hpp"

namespace fplab::order_detail {

// Where a team rank's CPU goes, by phase (CPU of the whole process, all its
// threads, so phases must not overlap): printed to stderr, one line per
// enumeration, when FPLAB_ORDERS_PROFILE is set. For finding the team's
// overhead (plan: costing and splitting the targets; build: this rank's
// states; exchange: the all-gather, waiting for the other ranks included;
// index: indexing the gathered level; walk: the tail walks).
class PhaseProfile {
 public:
  enum Phase : std::size_t { plan, build, exchange, index, walk, phases };
  PhaseProfile() : on_(std::getenv("FPLAB_ORDERS_PROFILE") != nullptr), last_(now()) {}
  void lap(Phase p) {
    if (!on_) return;
    const double t = now();
    seconds_[p] += t - last_;
    last_ = t;
  }
  void count_words(std::size_t mine, std::size_t level) {
    mine_words_ += mine;
    level_words_ += level;
  }
  void print(const OrderTeam& team, std::size_t levels, std::size_t starts) const {
    if (!on_) return;
    std::fprintf(stderr,
                 "orders profile rank %zu/%zu: cpu s plan %.3f build %.3f exchange %.3f "
                 "index %.3f walk %.3f; levels %zu, words built %zu of %zu, walk starts %zu\n",
                 team.rank, team.ranks, seconds_[plan], seconds_[build], seconds_[exchange],
                 seconds_[index], seconds_[walk], levels, mine_words_, level_words_, starts);
  }

 private:
  static double now() {
    timespec t{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
  }
  bool on_;
  double last_;
  std::array<double, phases> seconds_{};
  std::size_t mine_words_ = 0, level_words_ = 0;
};

}  // namespace fplab::order_detail
