#include "runner/harness/allocation_count.h"

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <new>

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

// The global operator new and delete, every replaceable form ([new.delete]), defined here so
// that they reach the counted malloc, and so that a stage file that defines its own (to
// allocate behind the count's back, from __libc_malloc, say) is a link error, "multiple
// definition of operator new", as a file that defines main is: the harness library is linked
// whole. Each behaves as the standard's default: a throwing new calls the new-handler until
// it gets memory or there is none, then throws std::bad_alloc; nothrow new returns null.
namespace {

void* AllocateOrThrow(size_t size, size_t alignment) {
  if (size == 0) size = 1;
  for (;;) {
    void* p = nullptr;
    if (alignment <= alignof(std::max_align_t)) {
      p = malloc(size);
    } else if (posix_memalign(&p, alignment, size) != 0) {
      p = nullptr;
    }
    if (p != nullptr) return p;
    const std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
}

void* AllocateOrNull(size_t size, size_t alignment) noexcept {
  try {
    return AllocateOrThrow(size, alignment);
  } catch (...) {
    return nullptr;
  }
}

constexpr size_t kDefault = alignof(std::max_align_t);

}  // namespace

void* operator new(size_t size) { return AllocateOrThrow(size, kDefault); }
void* operator new[](size_t size) { return AllocateOrThrow(size, kDefault); }
void* operator new(size_t size, const std::nothrow_t&) noexcept { return AllocateOrNull(size, kDefault); }
void* operator new[](size_t size, const std::nothrow_t&) noexcept { return AllocateOrNull(size, kDefault); }
void* operator new(size_t size, std::align_val_t a) { return AllocateOrThrow(size, static_cast<size_t>(a)); }
void* operator new[](size_t size, std::align_val_t a) { return AllocateOrThrow(size, static_cast<size_t>(a)); }
void* operator new(size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
  return AllocateOrNull(size, static_cast<size_t>(a));
}
void* operator new[](size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
  return AllocateOrNull(size, static_cast<size_t>(a));
}
void operator delete(void* p) noexcept { free(p); }
void operator delete[](void* p) noexcept { free(p); }
void operator delete(void* p, size_t) noexcept { free(p); }
void operator delete[](void* p, size_t) noexcept { free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { free(p); }
void operator delete(void* p, std::align_val_t) noexcept { free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { free(p); }

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
