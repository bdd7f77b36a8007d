// A clock that the code being timed cannot replace, for every program that times student code
// (the bench children of stages 2 to 4, and generate's bench mode for stage 5).
//
// The student's code is linked into the program that times it, and a function of theirs named
// clock_gettime takes the C library's place for every caller in the program, std::chrono's
// clocks included. TrustedSeconds() asks the kernel directly, with a system call made here
// (x86-64: syscall; AArch64: svc), past every symbol of the program: CLOCK_MONOTONIC in
// seconds. ClocksAgree() says whether spans timed by both clocks, the program's around the
// kernel's, came out alike: the program's may be longer (a thread can lose its core between
// the two readings, often on a busy machine), so it may be up to twice as long and 50 ms more,
// but not a tenth and a millisecond shorter. When they do not agree, the program's clock is
// not the system's, and its figures are not to be printed.
#pragma once

#include <time.h>

namespace wb::harness {

inline double TrustedSeconds() {
  timespec ts{};
#if defined(__x86_64__)
  long result;
  asm volatile("syscall"
               : "=a"(result)
               : "0"(228L /* SYS_clock_gettime */), "D"(static_cast<long>(CLOCK_MONOTONIC)), "S"(&ts)
               : "rcx", "r11", "memory");
  (void)result;
#elif defined(__aarch64__)
  register long number asm("x8") = 113;  // SYS_clock_gettime
  register long clock asm("x0") = CLOCK_MONOTONIC;
  register timespec* into asm("x1") = &ts;
  asm volatile("svc 0" : "+r"(clock) : "r"(number), "r"(into) : "memory");
#else
  clock_gettime(CLOCK_MONOTONIC, &ts);  // no direct call written for this architecture
#endif
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

inline bool ClocksAgree(double trustedSeconds, double librarySeconds) {
  return librarySeconds >= 0.9 * trustedSeconds - 1e-3 && librarySeconds <= 2 * trustedSeconds + 0.05;
}

}  // namespace wb::harness
