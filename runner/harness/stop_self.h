// How a program the runner times from outside marks where its timed work begins (and, for the
// generate program's bench mode, ends): it stops itself with SIGSTOP, and the runner, which
// waits for that, reads its clock and resumes it (ChildLimits::resumeStops,
// ProgramLimits::timedSpans).
//
// The stop is asked of the kernel directly (x86-64: syscall; AArch64: svc), as trusted_clock.h
// reads its clock: the student's code is linked into the same program, and a raise() or kill()
// of its own would take the C library's place, so that a file could keep the program from
// stopping (and the bench would blame the workbook) or stop it elsewhere, where the runner's
// clock would start late or end early.
#pragma once

#include <csignal>

namespace wb::harness {

inline void StopThisProcess() {
#if defined(__x86_64__)
  long pid;
  asm volatile("syscall" : "=a"(pid) : "0"(39L /* SYS_getpid */) : "rcx", "r11", "memory");
  long result;
  asm volatile("syscall"
               : "=a"(result)
               : "0"(62L /* SYS_kill */), "D"(pid), "S"(static_cast<long>(SIGSTOP))
               : "rcx", "r11", "memory");
  (void)result;
#elif defined(__aarch64__)
  long pid;
  {
    register long number asm("x8") = 172;  // SYS_getpid
    register long result asm("x0");
    asm volatile("svc 0" : "=r"(result) : "r"(number) : "memory");
    pid = result;
  }
  {
    register long number asm("x8") = 129;  // SYS_kill
    register long target asm("x0") = pid;
    register long signal asm("x1") = SIGSTOP;
    asm volatile("svc 0" : "+r"(target) : "r"(number), "r"(signal) : "memory");
  }
#else
  raise(SIGSTOP);  // no direct call written for this architecture
#endif
}

}  // namespace wb::harness
