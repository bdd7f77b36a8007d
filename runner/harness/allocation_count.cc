#include "runner/harness/allocation_count.h"

#include <atomic>
#include <cerrno>
#include <cstddef>

#ifndef __SANITIZE_ADDRESS__
namespace {
std::atomic<uint64_t> g_allocations{0};
}  // namespace

extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* pointer, size_t size);
void* __libc_memalign(size_t alignment, size_t size);

void* malloc(size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_malloc(size);
}
void* calloc(size_t count, size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_calloc(count, size);
}
void* realloc(void* pointer, size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_realloc(pointer, size);
}
void* memalign(size_t alignment, size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_memalign(alignment, size);
}
void* aligned_alloc(size_t alignment, size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, size_t alignment, size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  void* p = __libc_memalign(alignment, size);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
}  // extern "C"

namespace wb::harness {
uint64_t AllocationsSoFar() { return g_allocations.load(std::memory_order_relaxed); }
bool AllocationsCounted() { return true; }
}  // namespace wb::harness
#else
namespace wb::harness {
uint64_t AllocationsSoFar() { return 0; }
bool AllocationsCounted() { return false; }
}  // namespace wb::harness
#endif
