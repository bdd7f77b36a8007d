// Counts the heap allocations of the process it is linked into.
//
// Contract: AllocationsSoFar() is the number of calls, from any thread, to malloc, calloc,
// realloc, memalign, aligned_alloc and posix_memalign since the process started. Every
// replaceable operator new and delete is defined here too, on top of malloc and free, so new
// is counted and a stage file cannot replace it (a link error); the student build refuses a
// stage file that calls glibc's own allocators or the memory system calls by name
// (runner/build/student_build.h). Linking allocation_count.cc replaces those functions with versions
// that count and then call glibc's own (__libc_malloc and friends, which glibc exports for
// this purpose). Under AddressSanitizer, which replaces malloc itself, nothing is replaced
// and the count stays 0: callers must not read a 0 as a promise then (AllocationsCounted()).
#pragma once

#include <cstdint>

namespace wb::harness {

uint64_t AllocationsSoFar();
bool AllocationsCounted();

// Where an allocation came from, told by the shared objects on its call stack: the OpenMP
// runtime (libgomp: a parallel region starting its team of threads), the C++ library
// (libstdc++: a std::thread, a stream), or the program itself (the stage's code: a
// std::vector, new). Read from the return addresses of the stack (backtrace) and the object
// each lies in (dladdr), which needs no symbols.
enum class AllocationSite : uint64_t { kNone = 0, kYourCode = 1, kOpenMp = 2, kCppLibrary = 3 };

// From now on, keeps where the first allocation came from (WatchFirstAllocation also takes
// backtrace's own first-use allocation, so call it before what it watches);
// FirstAllocationSite() says where, kNone while there was none.
void WatchFirstAllocation();
AllocationSite FirstAllocationSite();

}  // namespace wb::harness
