#include "runner/harness/allocation_count.h"

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <new>

#ifndef __SANITIZE_ADDRESS__
#include <dlfcn.h>
#include <execinfo.h>

#include <cstring>

namespace {
std::atomic<uint64_t> g_allocations{0};

// The first allocation's site while watching: 0 none yet, -1 being read, else the site.
std::atomic<bool> g_watching{false};
std::atomic<int64_t> g_firstSite{0};
thread_local bool t_readingStack = false;  // backtrace or dladdr inside may allocate

wb::harness::AllocationSite SiteOfThisStack() {
  void* frames[32];
  const int count = backtrace(frames, 32);
  bool cppLibrary = false;
  for (int i = 1; i < count; ++i) {
    Dl_info info{};
    if (dladdr(frames[i], &info) == 0 || info.dli_fname == nullptr) continue;
    if (std::strstr(info.dli_fname, "libgomp") != nullptr) return wb::harness::AllocationSite::kOpenMp;
    if (std::strstr(info.dli_fname, "libstdc++") != nullptr) cppLibrary = true;
  }
  return cppLibrary ? wb::harness::AllocationSite::kCppLibrary : wb::harness::AllocationSite::kYourCode;
}

void Count() {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (!g_watching.load(std::memory_order_relaxed) || t_readingStack) return;
  int64_t none = 0;
  if (!g_firstSite.compare_exchange_strong(none, -1)) return;
  t_readingStack = true;
  g_firstSite.store(static_cast<int64_t>(SiteOfThisStack()));
  t_readingStack = false;
}
}  // namespace

extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* pointer, size_t size);
void* __libc_memalign(size_t alignment, size_t size);

void* malloc(size_t size) {
  Count();
  return __libc_malloc(size);
}
void* calloc(size_t count, size_t size) {
  Count();
  return __libc_calloc(count, size);
}
void* realloc(void* pointer, size_t size) {
  Count();
  return __libc_realloc(pointer, size);
}
void* memalign(size_t alignment, size_t size) {
  Count();
  return __libc_memalign(alignment, size);
}
void* aligned_alloc(size_t alignment, size_t size) {
  Count();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, size_t alignment, size_t size) {
  Count();
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

void WatchFirstAllocation() {
  static const bool warmed = [] {  // backtrace loads its unwinder on first use, which allocates
    void* frame[1];
    return backtrace(frame, 1) >= 0;
  }();
  (void)warmed;
  g_firstSite.store(0);
  g_watching.store(true);
}

AllocationSite FirstAllocationSite() {
  const int64_t site = g_firstSite.load();
  return site > 0 ? static_cast<AllocationSite>(site) : AllocationSite::kNone;
}
}  // namespace wb::harness
#else
namespace wb::harness {
uint64_t AllocationsSoFar() { return 0; }
bool AllocationsCounted() { return false; }
void WatchFirstAllocation() {}
AllocationSite FirstAllocationSite() { return AllocationSite::kNone; }
}  // namespace wb::harness
#endif
