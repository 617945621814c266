// Forced into every translation unit of the WebAssembly build only
// (classroom/CMakeLists.txt, -include): libc++'s std::isfinite is a template
// for arithmetic types alone, where libstdc++ also has isfinite(double), which
// a type converting to double reaches. reductions/order_program.cpp runs the
// compensated strategies over such a type (its symbolic Sym, whose
// conversion throws: only tree-shaped strategies are recorded), so the
// libc++ build needs the double overload's effect; the native builds never
// see this file.
#pragma once

#include <cmath>
#include <type_traits>

namespace std {  // NOLINT(cert-dcl58-cpp): supplies libstdc++'s overload
template <class T>
requires(!is_arithmetic_v<T> && is_convertible_v<T, double>) bool isfinite(const T& v) {
  return isfinite(static_cast<double>(v));
}
}  // namespace std
