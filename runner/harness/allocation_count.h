// Counts the heap allocations of the process it is linked into.
//
// Contract: AllocationsSoFar() is the number of calls, from any thread, to malloc, calloc,
// realloc, memalign, aligned_alloc and posix_memalign since the process started (operator
// new reaches malloc). Linking allocation_count.cc replaces those functions with versions
// that count and then call glibc's own (__libc_malloc and friends, which glibc exports for
// this purpose). Under AddressSanitizer, which replaces malloc itself, nothing is replaced
// and the count stays 0: callers must not read a 0 as a promise then (AllocationsCounted()).
#pragma once

#include <cstdint>

namespace wb::harness {

uint64_t AllocationsSoFar();
bool AllocationsCounted();

}  // namespace wb::harness
