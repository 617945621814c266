// The order-enumeration benchmarks (bench_orders.cpp), built when
// experiments/ provides enumerate_orders (FPLAB_BENCH_ORDERS).
#pragma once

namespace fplab::bench {

void register_order_benchmarks();

}  // namespace fplab::bench
