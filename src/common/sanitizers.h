// Which sanitizer this translation unit is built with (cmake/sanitizers.cmake), for the few
// places whose behaviour a sanitizer build must relax. GCC and Clang both define
// __SANITIZE_ADDRESS__ / __SANITIZE_THREAD__ under -fsanitize=address / thread.
#pragma once

namespace leap {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif

#if defined(__SANITIZE_THREAD__)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif

// Sanitizers whose shadow memory needs terabytes of address space: no RLIMIT_AS under them.
inline constexpr bool kShadowMemorySanitizer = kAddressSanitizer || kThreadSanitizer;

}  // namespace leap
