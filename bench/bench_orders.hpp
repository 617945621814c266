// The order-enumeration benchmarks (bench_orders.cpp) of
// reductions/orders.hpp.
#pragma once

namespace fplab::bench {

void register_order_benchmarks();

}  // namespace fplab::bench
