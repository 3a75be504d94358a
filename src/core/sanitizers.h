#pragma once
// PARLEY_SANITIZED is defined in builds under AddressSanitizer or ThreadSanitizer: GCC says so
// with __SANITIZE_ADDRESS__ / __SANITIZE_THREAD__, clang (until recent versions) only through
// __has_feature. For code and tests that cannot run the same way there (their own allocator,
// a larger address space, a runtime that starts late).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PARLEY_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define PARLEY_SANITIZED 1
#endif
#endif
