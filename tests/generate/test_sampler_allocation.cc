// Sample() allocates nothing: this executable replaces the global operator new and counts
// every call, then samples with every step of the chain switched on.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

#include "runner/generate/sampler.h"

namespace {
std::atomic<long> allocationCount{0};

void* CountedAllocate(std::size_t size) {
  allocationCount.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
}  // namespace

// The replaceable allocation functions that the sampler could reach (scalar and array, with
// and without nothrow); the aligned ones are not used by anything here.
void* operator new(std::size_t size) { return CountedAllocate(size); }
void* operator new[](std::size_t size) { return CountedAllocate(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  allocationCount.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  allocationCount.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

TEST_CASE("the counter sees an allocation") {
  const long before = allocationCount.load();
  auto* held = new std::vector<int>(100);
  CHECK(allocationCount.load() - before >= 2);  // the vector object and its elements
  delete held;
}

TEST_CASE("Sample allocates nothing, whatever the settings") {
  constexpr int kVocab = 5000;
  std::vector<float> logits(kVocab);
  for (int i = 0; i < kVocab; ++i) logits[static_cast<size_t>(i)] = static_cast<float>((i * 37) % 101) / 10.0f - 5.0f;
  std::vector<int32_t> history;
  for (int i = 0; i < 300; ++i) history.push_back((i * 97) % kVocab);

  wb::generate::SamplerSettings full;  // the defaults: top-k 40, top-p 0.95, min-p 0.05
  full.repeatPenalty = 1.1f;
  wb::generate::SamplerSettings noTopK = full;
  noTopK.topK = 0;  // the full sort
  wb::generate::SamplerSettings greedy = full;
  greedy.temperature = 0.0f;
  for (const auto& settings : {full, noTopK, greedy}) {
    wb::generate::Sampler sampler(settings, kVocab);
    const long before = allocationCount.load();
    int32_t token = 0;
    for (int step = 0; step < 50; ++step) {
      token = sampler.Sample(logits, history);
      history[static_cast<size_t>(step)] = token;  // the history changes as generation would change it
    }
    CHECK(allocationCount.load() == before);
    CHECK(token >= 0);
    CHECK(token < kVocab);
  }
}
