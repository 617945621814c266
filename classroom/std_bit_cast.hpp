// Forced into every translation unit of the WebAssembly build only
// (classroom/CMakeLists.txt, -include): Debian 12's emscripten 3.1.6 ships
// a libc++ whose <bit> lacks std::bit_cast (C++20), which fplab uses to
// read float bits. clang's __builtin_bit_cast is what libc++ itself uses
// for it later; the native builds never see this file.
#pragma once

#include <bit>
#include <type_traits>

#if !defined(__cpp_lib_bit_cast)
namespace std {  // NOLINT(cert-dcl58-cpp): supplies a missing standard function
template <class To, class From>
requires(sizeof(To) == sizeof(From) && is_trivially_copyable_v<To> &&
         is_trivially_copyable_v<From>) constexpr To bit_cast(const From& from) noexcept {
  return __builtin_bit_cast(To, from);
}
}  // namespace std
#endif
