// workbook-bench-stage02: what a KV cache buys, measured. `./workbook bench 2` runs it.
//
//   workbook-bench-stage02 [--contexts 512,4096] [--budget SECONDS]
//
// For each context length L it times, in this one process, on the same weights:
//   decode step: the stage-2 solution's decoder_step(n = 1, pos = L - 1), which reads the
//                L - 1 cached keys and values and computes one token;
//   recompute:   the stage-1 solution's decoder_block(T = L), which is what producing that
//                token costs without a cache: the whole sequence again.
// Each figure is the median of its runs. A measurement repeats up to its run limit while
// the next run is expected to end within --budget seconds of its first one, and runs at
// least once: a long recompute runs once, a decode step many times. Output: a table, one
// row per context, printed as soon as the row is measured.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "reference/block/block_shape.h"
#include "reference/gen/block_data.h"
#include "stage02_decode.h"

namespace {

struct Timing {
  double medianSeconds = 0;
  int runs = 0;
};

Timing Measure(const std::function<void()>& run, int maxRuns, double budgetSeconds) {
  std::vector<double> seconds;
  double elapsed = 0;
  while (static_cast<int>(seconds.size()) < maxRuns) {
    const auto start = std::chrono::steady_clock::now();
    run();
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    seconds.push_back(took);
    elapsed += took;
    if (elapsed + took > budgetSeconds) break;
  }
  std::sort(seconds.begin(), seconds.end());
  const size_t middle = seconds.size() / 2;
  const double median = seconds.size() % 2 == 1 ? seconds[middle] : (seconds[middle - 1] + seconds[middle]) / 2;
  return {median, static_cast<int>(seconds.size())};
}

std::string Duration(double seconds) {
  if (seconds >= 1.0) return fmt::format("{:.2f} s", seconds);
  if (seconds >= 1e-3) return fmt::format("{:.2f} ms", seconds * 1e3);
  return fmt::format("{:.1f} us", seconds * 1e6);
}

bool ParseContexts(const std::string& text, std::vector<int>& contexts) {
  contexts.clear();
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    char* end = nullptr;
    const long value = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || value < 1 || value > MAX_T) return false;
    contexts.push_back(static_cast<int>(value));
    start = comma + 1;
  }
  return !contexts.empty();
}

// The buffers of one decoder_block or decoder_step call over `rows` tokens.
struct Outputs {
  explicit Outputs(int rows)
      : norm1(rows * D), q(rows * D), k(rows * KV), v(rows * KV), attnOut(rows * D), residual1(rows * D),
        norm2(rows * D), ffnOut(rows * D), output(rows * D) {}
  std::vector<float> norm1, q, k, v, attnOut, residual1, norm2, ffnOut, output;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> contexts = {512, 4096};
  double budget = 6.0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--contexts" && i + 1 < argc && ParseContexts(argv[i + 1], contexts)) {
      ++i;
    } else if (arg == "--budget" && i + 1 < argc && std::atof(argv[i + 1]) > 0) {
      budget = std::atof(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: workbook-bench-stage02 [--contexts L1,L2,... (1 to %d)] [--budget SECONDS]\n",
                   MAX_T);
      return 2;
    }
  }

  const ref::BlockShape shape = ref::Stage1Shape();
  const std::vector<float> w = ref::GenerateBlockWeights(shape, ref::kBlockWeightSeed).values;
  std::vector<float> ropeCos;
  std::vector<float> ropeSin;
  ref::MakeFloatRopeTables(MAX_T, DH, ref::kRopeBase, ropeCos, ropeSin);
  const int longest = *std::max_element(contexts.begin(), contexts.end());
  const std::vector<float> x = ref::GenerateInputRows(1, longest, D, 1.0);
  // A filled cache: its values change nothing about the time of a step, only its length.
  std::vector<float> kCache = ref::GenerateInputRows(2, MAX_T, KV, 1.0);
  std::vector<float> vCache = ref::GenerateInputRows(3, MAX_T, KV, 1.0);

  std::printf("Stage 2 bench: the time to produce one more token at context length L\n");
  std::printf("  decode step: decoder_step(n=1, pos=L-1), solutions/02-kv-cache (reads L-1 cached rows)\n");
  std::printf("  recompute:   decoder_block(T=L), solutions/01-block (the whole sequence again, no cache)\n");
  std::printf("  each time is the median of its runs; both in one process, on the same weights\n\n");
  std::printf("%8s  %12s %5s  %12s %5s  %10s\n", "context", "decode step", "runs", "recompute", "runs", "ratio");
  std::fflush(stdout);
  for (int context : contexts) {
    Outputs step(1);
    const int pos = context - 1;
    const float* newRow = x.data() + static_cast<size_t>(pos) * D;
    auto decodeStep = [&] {
      decoder_step(1, pos, w.data(), newRow, ropeCos.data(), ropeSin.data(), kCache.data(), vCache.data(),
                   step.norm1.data(), step.q.data(), step.k.data(), step.v.data(), step.attnOut.data(),
                   step.residual1.data(), step.norm2.data(), step.ffnOut.data(), step.output.data());
    };
    decodeStep();  // warm up: page in the weights and the cache
    const Timing decode = Measure(decodeStep, 15, budget);

    Outputs block(context);
    auto recompute = [&] {
      decoder_block(context, w.data(), x.data(), ropeCos.data(), ropeSin.data(), block.norm1.data(),
                    block.q.data(), block.k.data(), block.v.data(), block.attnOut.data(), block.residual1.data(),
                    block.norm2.data(), block.ffnOut.data(), block.output.data());
    };
    const Timing full = Measure(recompute, 5, budget);
    std::printf("%8d  %12s %5d  %12s %5d  %9.0fx\n", context, Duration(decode.medianSeconds).c_str(), decode.runs,
                Duration(full.medianSeconds).c_str(), full.runs, full.medianSeconds / decode.medianSeconds);
    std::fflush(stdout);
  }
  return 0;
}
