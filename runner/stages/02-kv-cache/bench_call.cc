// Stage 2's bench child: times decoder_step (the student's, or the solution's) at one
// context length L, in two ways (bench_call.h):
//   decode step: decoder_step(n = 1, pos = L - 1) over a cache of L - 1 rows: one more token;
//   recompute:   decoder_step(n = L, pos = 0): the same token without a cache, by computing
//                the whole sequence again.
// Each figure is the median of its runs. A measurement repeats up to its run limit while
// the next run is expected to end within the budget of its first one, and runs at least
// once: a long recompute runs once, a decode step many times.
//
// As stage 3's bench does (runner/stages/03-fused/bench_timing.h), the clock is the kernel's,
// read with a system call of the bench's own and checked against the C library's, and the
// output rows of each timed call are cleared before it and compared with the first timed
// call's after it: a refused measurement comes back with its run count set to the refusal's
// code, and the driver prints no figure for it.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "bench_call.h"
#include "runner/harness/harness.h"
#include "runner/harness/trusted_clock.h"
#include "runner/stages/03-fused/bench_timing.h"
#include "stage02_decode.h"

namespace wb::harness {
namespace {

struct Timing {
  double medianSeconds = 0;
  int runs = 0;
};

template <typename Run>
Timing Measure(const Run& run, int maxRuns, double budgetSeconds, float* output, size_t outputCount) {
  std::vector<double> seconds;
  std::vector<float> first;
  double elapsed = 0, libraryElapsed = 0;
  while (static_cast<int>(seconds.size()) < maxRuns) {
    std::fill(output, output + outputCount, std::numeric_limits<float>::quiet_NaN());
    const auto libraryStart = std::chrono::steady_clock::now();
    const double start = TrustedSeconds();
    run();
    const double took = TrustedSeconds() - start;
    libraryElapsed += std::chrono::duration<double>(std::chrono::steady_clock::now() - libraryStart).count();
    if (first.empty()) {
      first.assign(output, output + outputCount);
    } else if (std::memcmp(first.data(), output, outputCount * sizeof(float)) != 0) {
      return {0, stage03::kRecomputeFailed};
    }
    seconds.push_back(took);
    elapsed += took;
    if (elapsed + took > budgetSeconds) break;
  }
  if (!ClocksAgree(elapsed, libraryElapsed)) return {0, stage03::kClockDisagreed};
  std::sort(seconds.begin(), seconds.end());
  const size_t middle = seconds.size() / 2;
  const double median = seconds.size() % 2 == 1 ? seconds[middle] : (seconds[middle - 1] + seconds[middle]) / 2;
  return {median, static_cast<int>(seconds.size())};
}

}  // namespace

void CallStage(Region& region) {
  using L = stage02::BenchCall;
  region.Bind<L>();
  const L::Params params = region.Params<L>();
  const int context = params.context;
  const float* w = region.Floats<L>(L::kW);
  const float* x = region.Floats<L>(L::kX);
  const float* ropeCos = region.Floats<L>(L::kRopeCos);
  const float* ropeSin = region.Floats<L>(L::kRopeSin);
  float* kCache = region.Floats<L>(L::kKCache);
  float* vCache = region.Floats<L>(L::kVCache);
  auto out = [&region](L::Buffer b) { return region.Floats<L>(b); };
  auto step = [&](int n, int pos, const float* rows) {
    decoder_step(n, pos, w, rows, ropeCos, ropeSin, kCache, vCache, out(L::kNorm1), out(L::kQ), out(L::kK),
                 out(L::kV), out(L::kAttnOut), out(L::kResidual1), out(L::kNorm2), out(L::kFfnOut), out(L::kOutput));
  };
  const float* newRow = x + static_cast<size_t>(context - 1) * D;
  region.BeginCall(0);
  step(1, context - 1, newRow);  // warm up: page in the weights and the cache
  const Timing decode = Measure([&] { step(1, context - 1, newRow); }, 15, params.budgetSeconds, out(L::kOutput), D);
  const Timing recompute = Measure([&] { step(context, 0, x); }, 5, params.budgetSeconds, out(L::kOutput),
                                   static_cast<size_t>(context) * D);
  region.EndCall();
  float* timings = out(L::kTimings);
  timings[0] = static_cast<float>(decode.medianSeconds);
  timings[1] = static_cast<float>(decode.runs);
  timings[2] = static_cast<float>(recompute.medianSeconds);
  timings[3] = static_cast<float>(recompute.runs);
}

}  // namespace wb::harness
