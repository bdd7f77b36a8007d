// stage04-yardstick: what stage 4's bench holds the student's quantized kernels against, on
// the same machine in the same run (runner/stages/04-quant/bench_driver.cc starts it):
//
//   stage04-yardstick probe BYTES BUDGET [MEMORY]
//                                                the read bandwidth over a buffer of BYTES
//                                                (larger than the caches), on 1 and 2
//                                                threads; MEMORY is where the buffer lives,
//                                                as the weights it is held against do:
//                                                "shared" (a memfd mapped shared, as stage 4's
//                                                bench region; the default) or "huge" (private
//                                                anonymous memory with transparent huge pages
//                                                asked for, as a model read into memory)
//   stage04-yardstick float COPIES BUDGET        stage 3's solution matmul at T = 1 on the
//                                                FFN shape (kDecodeRows x kDecodeCols floats),
//                                                each run on the next of COPIES matrices, on
//                                                1 and 2 threads
//
// Each prints one JSON object on stdout: {"seconds": [timing at 1 thread, at 2]} with each
// timing's median, fastest, slowest and runs; the probe adds "bytes", "memory" and
// "huge_page_bytes", how much of its buffer the kernel backed with huge pages. Trusted code:
// it runs outside the sandbox, and no student code is linked into it, only stage 3's solution
// (solutions/03-fused/fused.cc, built with stage 3's flags). This file is compiled with stage
// 4's flags, so the probe reads memory with the instructions a student's kernel may use, and
// its bandwidth is the one that kernel can reach.
#include <omp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_call.h"
#include "runner/stages/03-fused/bench_timing.h"
#include "stage03_fused.h"
#include "runner/stages/call_timing_json.h"

namespace {

using nlohmann::json;
using wb::stage03::Measure;
using wb::stage03::Timing;
using wb::stage04::kDecodeCols;
using wb::stage04::kDecodeRows;

typedef float Vec __attribute__((vector_size(64)));
constexpr size_t kFloatsPerStep = 4 * sizeof(Vec) / sizeof(float);  // four vectors in flight

// A page-aligned buffer of floats in the kind of memory the weights it is held against live
// in: the probe's, and stage 3's float weights. The alignment matters: a float vector from
// malloc starts 16 bytes into a cache line, so every 64-byte load straddles two lines, and on
// this project's machine the probe read 28 GB/s on one thread that way, 37 aligned. The kind
// of memory is like for like: stage 5's model sits on huge pages where the kernel grants them,
// stage 4's bench region is a shared mapping, which gets huge pages only if the kernel's
// shmem setting allows, and a page size can change what a stream reads (a TLB miss per 4 KiB
// instead of per 2 MiB). On this machine the two kinds read within the noise of each other.
class BenchBuffer {
 public:
  // Nullptr data() when the memory could not be had; then why() says so. The pages are mapped
  // on first write: the caller writes every value before it times anything.
  BenchBuffer(size_t bytes, const std::string& memory) : bytes_(bytes) {
    if (memory == "huge") {
      Map(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
      if (data_ != nullptr) madvise(data_, bytes, MADV_HUGEPAGE);  // a hint, as the model loader's
    } else {
      fd_ = memfd_create("workbook-probe", 0);
      if (fd_ >= 0 && ftruncate(fd_, static_cast<off_t>(bytes)) == 0) {
        Map(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0));
      } else {
        why_ = std::string("cannot make a shared buffer: ") + std::strerror(errno);
      }
    }
  }
  ~BenchBuffer() {
    if (data_ != nullptr) munmap(data_, bytes_);
    if (fd_ >= 0) close(fd_);
  }
  BenchBuffer(const BenchBuffer&) = delete;
  BenchBuffer& operator=(const BenchBuffer&) = delete;

  float* data() const { return data_; }
  size_t floats() const { return bytes_ / sizeof(float); }
  const std::string& why() const { return why_; }

  // How many of the buffer's bytes sit on huge pages: the AnonHugePages and ShmemPmdMapped
  // lines of its mapping in /proc/self/smaps (proc(5)), in kB.
  uint64_t HugePageBytes() const {
    std::ifstream smaps("/proc/self/smaps");
    const auto start = reinterpret_cast<uintptr_t>(data_);
    std::string line;
    bool ours = false;
    uint64_t kib = 0;
    while (std::getline(smaps, line)) {
      uintptr_t from = 0;
      char dash = 0;
      std::istringstream head(line);
      if (head >> std::hex >> from >> dash && dash == '-') {  // a mapping's first line: "from-to perms ..."
        ours = from == start;
        continue;
      }
      if (!ours) continue;
      for (const char* field : {"AnonHugePages:", "ShmemPmdMapped:"}) {
        if (line.rfind(field, 0) == 0) kib += std::strtoull(line.c_str() + std::strlen(field), nullptr, 10);
      }
    }
    return kib * 1024;
  }

 private:
  void Map(void* address) {
    if (address == MAP_FAILED) {
      why_ = std::string("cannot map the buffer: ") + std::strerror(errno);
      return;
    }
    data_ = static_cast<float*>(address);
  }

  size_t bytes_;
  int fd_ = -1;
  float* data_ = nullptr;
  std::string why_;
};

// Read bandwidth: each thread sums its own contiguous share of the buffer, four independent
// vector accumulators at a time (enough loads in flight that the memory, not the adds, sets
// the pace). Every page of the buffer is mapped before the clock starts.
Timing ReadBandwidth(const BenchBuffer& buffer, int threads, double budget) {
  float sink = 0;
  const Timing timing = Measure(
      [&] {
        float total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
        {
          const size_t share = buffer.floats() / omp_get_num_threads() / kFloatsPerStep * kFloatsPerStep;
          const float* begin = buffer.data() + share * omp_get_thread_num();
          Vec sums[4] = {};
          for (size_t i = 0; i < share; i += kFloatsPerStep) {
            for (int j = 0; j < 4; ++j) {
              Vec v;
              std::memcpy(&v, begin + i + j * (sizeof(Vec) / sizeof(float)), sizeof v);
              sums[j] += v;
            }
          }
          const Vec all = (sums[0] + sums[1]) + (sums[2] + sums[3]);
          for (size_t j = 0; j < sizeof(Vec) / sizeof(float); ++j) total += all[j];
        }
        sink += total;
      },
      budget);
  if (sink == 1.5f) std::puts("");  // keeps the sums alive
  return timing;
}

// Deterministic values in [-1, 1): a float matmul's time does not depend on them.
void Fill(float* values, size_t count, unsigned seed) {
  unsigned state = seed;
  for (size_t i = 0; i < count; ++i) {
    state = state * 1664525u + 1013904223u;
    values[i] = static_cast<float>(state >> 8) / 8388608.0f - 1.0f;
  }
}

int Usage() {
  std::fprintf(stderr, "usage: stage04-yardstick probe BYTES BUDGET [shared|huge] | float COPIES BUDGET\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) return Usage();
  const std::string mode = argv[1];
  const std::string memory = argc > 4 ? argv[4] : "shared";
  if (argc > 5 || (mode == "probe" && memory != "shared" && memory != "huge") || (mode != "probe" && argc > 4)) {
    return Usage();
  }
  const double count = std::atof(argv[2]);
  const double budget = std::atof(argv[3]);
  if (!(count >= 1) || !(budget > 0)) return Usage();
  json result;
  if (mode == "probe") {
    // Rounded up to whole steps of both threads, so each share is exactly half.
    const size_t unit = 2 * kFloatsPerStep;
    const size_t floats = (static_cast<size_t>(count) / sizeof(float) + unit - 1) / unit * unit;
    const BenchBuffer buffer(floats * sizeof(float), memory);
    if (buffer.data() == nullptr) {
      std::fprintf(stderr, "stage04-yardstick: %s\n", buffer.why().c_str());
      return 1;
    }
    std::fill(buffer.data(), buffer.data() + buffer.floats(), 1.0f);  // every page mapped now
    result["bytes"] = floats * sizeof(float);
    result["memory"] = memory;
    result["huge_page_bytes"] = buffer.HugePageBytes();
    for (int threads : {1, 2}) result["seconds"].push_back(wb::YardstickTimingJson(ReadBandwidth(buffer, threads, budget)));
  } else if (mode == "float") {
    const size_t copies = static_cast<size_t>(count);
    const size_t matrix = static_cast<size_t>(kDecodeRows) * kDecodeCols;
    // In shared memory, line-aligned, as the quantized kernels' copies are in the bench region.
    const BenchBuffer buffer(copies * matrix * sizeof(float), "shared");
    if (buffer.data() == nullptr) {
      std::fprintf(stderr, "stage04-yardstick: %s\n", buffer.why().c_str());
      return 1;
    }
    float* weights = buffer.data();
    for (size_t c = 0; c < copies; ++c) Fill(weights + c * matrix, matrix, static_cast<unsigned>(c + 1));
    std::vector<float> x(kDecodeCols), y(kDecodeRows);
    Fill(x.data(), x.size(), 99);
    for (int threads : {1, 2}) {
      // Each run reads the next copy: together they are larger than the caches (MemoryPassBytes),
      // so a run finds none of its matrix left in the cache by the one before (as a model's
      // layers, read one after another, would not).
      size_t next = 0;
      const Timing t = Measure(
          [&] {
            matmul(1, kDecodeRows, kDecodeCols, x.data(), weights + next * matrix, y.data(),
                   Accumulate::kOverwrite, threads);
            next = (next + 1) % copies;
          },
          budget);
      result["seconds"].push_back(wb::YardstickTimingJson(t));
    }
  } else {
    return Usage();
  }
  std::printf("%s\n", result.dump().c_str());
  return 0;
}
