// stage03-yardstick: what stage 3's bench measures the student's kernels against, on the
// same machine in the same run (runner/stages/03-fused/bench_driver.cc starts it):
//
//   stage03-yardstick probe BUDGET [BYTES]     the machine's f32 FMA peak, and the read
//                                              bandwidth over a BYTES buffer (256 MiB when
//                                              not given), on 1 and 2 threads
//   stage03-yardstick corename                 OpenBLAS's core type and one timed sgemm
//                                              (512 x 768 x 512, one thread): the driver
//                                              starts it once per OPENBLAS_CORETYPE candidate
//   stage03-yardstick measure T THREADS BUDGET cblas_sgemm at the four matmul shapes (sgemv
//                                              for T = 1), a block built on them, and stage
//                                              1's loop order at the four shapes
//
// Each prints one JSON object on stdout. Trusted code: it runs outside the sandbox, and no
// student code is linked into it. The OpenBLAS block is fused_block's sequence with every
// projection a cblas_sgemm call and the rest (RMSNorm, RoPE, SiLU) plain loops, around the
// solution's own causal_attention, so its ratio to fused_block measures the GEMMs and the
// fusion, not the attention.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_timing.h"
#include "stage03_fused.h"
#include "runner/stages/call_timing_json.h"

// OpenBLAS's own (cblas.h declares them in 0.3.21; declared here too for older headers).
extern "C" {
char* openblas_get_corename(void);
void openblas_set_num_threads(int num_threads);
char* openblas_get_config(void);
}

namespace {

using nlohmann::json;
using wb::stage03::Measure;

typedef float Vec __attribute__((vector_size(64)));

// --- probes ---------------------------------------------------------------------------------
// The FMA peak: each thread keeps 16 independent chains of a = a * b + c in flight (more
// than an FMA unit's latency times its throughput), so only the units' rate limits it.
double FmaPeak(int threads, double budget) {
  constexpr long kSteps = 4'000'000;
  constexpr int kChains = 16;
  const auto timing = Measure(
      [&] {
#pragma omp parallel num_threads(threads)
        {
          Vec a[kChains];
          for (int i = 0; i < kChains; ++i) a[i] = Vec{} + 1.0f + 0.001f * i;
          const Vec b = Vec{} + 0.9999f;
          const Vec c = Vec{} + 0.0001f;
          for (long s = 0; s < kSteps; ++s) {
            for (int i = 0; i < kChains; ++i) a[i] = a[i] * b + c;
          }
          Vec sum = {};
          for (int i = 0; i < kChains; ++i) sum += a[i];
          if (sum[0] == 12345.0f) std::puts("");  // keeps the chains alive
        }
      },
      budget);
  const double flops = 2.0 * kSteps * kChains * (sizeof(Vec) / sizeof(float)) * threads;
  return flops / timing.fastest / 1e9;  // the peak: the best run, not the median
}

// Read bandwidth: every thread sums its share of a buffer larger than the last-level cache
// (the bench asks for twice its size), four vectors at a time. The buffer is held as vectors
// so that it starts on a 64-byte boundary: a float vector from malloc starts 16 bytes into a
// line, every 64-byte load then straddles two lines, and on this project's machine that read
// 28 GB/s on one thread where aligned loads read 37.
constexpr size_t kDefaultProbeBytes = size_t{256} << 20;
constexpr size_t kProbeStepFloats = 2 * 64;  // both threads' shares whole steps of 64 floats

// BYTES rounded up to whole steps of both threads, so that each share is exactly half.
size_t ProbeFloats(size_t bytes) {
  return (bytes / sizeof(float) + kProbeStepFloats - 1) / kProbeStepFloats * kProbeStepFloats;
}

double ReadBandwidth(int threads, double budget, size_t floats) {
  const std::vector<Vec> vectors(floats / (sizeof(Vec) / sizeof(float)), Vec{} + 1.0f);
  const float* data = reinterpret_cast<const float*>(vectors.data());
  float sink = 0;
  const auto timing = Measure(
      [&] {
        float total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
        {
          const int n = omp_get_num_threads();
          const size_t share = floats / n / 64 * 64;
          const float* begin = data + share * omp_get_thread_num();
          Vec s[4] = {};
          for (size_t i = 0; i < share; i += 64) {
            for (int j = 0; j < 4; ++j) {
              Vec v;
              std::memcpy(&v, begin + i + 16 * j, sizeof v);
              s[j] += v;
            }
          }
          const Vec all = (s[0] + s[1]) + (s[2] + s[3]);
          for (int j = 0; j < 16; ++j) total += all[j];
        }
        sink += total;
      },
      budget);
  if (sink == 1.5f) std::puts("");
  return floats * sizeof(float) / timing.fastest / 1e9;
}

// --- the OpenBLAS yardsticks -----------------------------------------------------------------
// y (T x out) = x (T x in) . W^T (+ y with accumulate), W row-major (out, in): cblas_sgemm,
// or for one row cblas_sgemv (y = W x), which OpenBLAS runs without packing W first, several
// times faster than sgemm with M = 1: the yardstick is OpenBLAS at its best for the shape.
void Sgemm(int T, int out, int in, const float* x, const float* W, float* y, bool accumulate) {
  const float beta = accumulate ? 1.0f : 0.0f;
  if (T == 1) {
    cblas_sgemv(CblasRowMajor, CblasNoTrans, out, in, 1.0f, W, in, x, 1, beta, y, 1);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, out, in, 1.0f, x, in, W, in, beta, y, out);
}

void RmsNormRows(int T, const float* x, const float* weight, float* out) {
  for (int t = 0; t < T; ++t) {
    const float* row = x + static_cast<size_t>(t) * D;
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int c = 0; c < D; ++c) sum += row[c] * row[c];
    const float inverse = 1.0f / std::sqrt(sum / D + RMS_EPS);
#pragma omp simd
    for (int c = 0; c < D; ++c) out[static_cast<size_t>(t) * D + c] = row[c] * inverse * weight[c];
  }
}

void RopeRows(int T, float* qkv, const float* ropeCos, const float* ropeSin) {
  for (int t = 0; t < T; ++t) {
    for (int h = 0; h < HQ + HKV; ++h) {
      float* head = qkv + static_cast<size_t>(t) * QKV + h * DH;  // q heads, then the k heads
      const float* c = ropeCos + t * ROPE_PAIRS;
      const float* s = ropeSin + t * ROPE_PAIRS;
#pragma omp simd
      for (int f = 0; f < ROPE_PAIRS; ++f) {
        const float a = head[f];
        const float b = head[f + ROPE_PAIRS];
        head[f] = a * c[f] - b * s[f];
        head[f + ROPE_PAIRS] = a * s[f] + b * c[f];
      }
    }
  }
}

struct Buffers {
  explicit Buffers(int T)
      : norm1(static_cast<size_t>(T) * D), qkv(static_cast<size_t>(T) * QKV), attnOut(norm1.size()),
        residual1(norm1.size()), norm2(norm1.size()), gate(static_cast<size_t>(T) * F), up(gate.size()),
        output(norm1.size()) {}
  std::vector<float> norm1, qkv, attnOut, residual1, norm2, gate, up, output;
};

// fused_block's steps with cblas_sgemm for every projection (gate and up as two calls and
// a pass over both), the solution's causal_attention between them.
void OpenBlasBlock(int T, int threads, const float* w, const float* x, const float* ropeCos, const float* ropeSin,
                   Buffers& b) {
  const size_t rows = static_cast<size_t>(T);
  RmsNormRows(T, x, w + OFF_RMS1, b.norm1.data());
  Sgemm(T, QKV, D, b.norm1.data(), w + OFF_WQ, b.qkv.data(), false);
  RopeRows(T, b.qkv.data(), ropeCos, ropeSin);
  causal_attention(T, b.qkv.data(), b.attnOut.data(), threads);
  std::copy(x, x + rows * D, b.residual1.data());
  Sgemm(T, D, D, b.attnOut.data(), w + OFF_WO, b.residual1.data(), true);
  RmsNormRows(T, b.residual1.data(), w + OFF_RMS2, b.norm2.data());
  Sgemm(T, F, D, b.norm2.data(), w + OFF_WGATE, b.gate.data(), false);
  Sgemm(T, F, D, b.norm2.data(), w + OFF_WUP, b.up.data(), false);
#pragma omp parallel for simd num_threads(threads)
  for (size_t i = 0; i < rows * F; ++i) b.gate[i] = b.gate[i] / (1.0f + std::exp(-b.gate[i])) * b.up[i];
  std::copy(b.residual1.begin(), b.residual1.end(), b.output.begin());
  Sgemm(T, D, F, b.gate.data(), w + OFF_WDOWN, b.output.data(), true);
}

// Stage 1's loop order: token by token, one dot product per output (the stage-1 solution's
// MatVec), compiled as this stage's code is.
void StageOneLoops(int T, int out, int in, const float* x, const float* W, float* y) {
  for (int t = 0; t < T; ++t) {
    for (int o = 0; o < out; ++o) {
      float sum = 0;
      for (int i = 0; i < in; ++i) sum += x[static_cast<size_t>(t) * in + i] * W[static_cast<size_t>(o) * in + i];
      y[static_cast<size_t>(t) * out + o] = sum;
    }
  }
}

// Deterministic values in [-1, 1): the yardstick's timings do not depend on them.
std::vector<float> Filled(size_t count, unsigned seed) {
  std::vector<float> values(count);
  unsigned state = seed;
  for (float& v : values) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<float>(state >> 8) / 8388608.0f - 1.0f;
  }
  return values;
}

int Usage() {
  std::fprintf(stderr, "usage: stage03-yardstick probe BUDGET [BYTES] | corename | measure T THREADS BUDGET\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage();
  const std::string mode = argv[1];
  json result;
  if (mode == "probe" && (argc == 3 || argc == 4)) {
    const double budget = std::atof(argv[2]);
    const double bytes = argc == 4 ? std::atof(argv[3]) : static_cast<double>(kDefaultProbeBytes);
    if (!(budget > 0) || !(bytes >= 1) || bytes > 0x1p40) return Usage();
    const size_t floats = ProbeFloats(static_cast<size_t>(bytes));
    result["fma_peak_gflops"] = {FmaPeak(1, budget), FmaPeak(2, budget)};
    result["read_bandwidth_gbs"] = {ReadBandwidth(1, budget, floats), ReadBandwidth(2, budget, floats)};
    result["read_bytes"] = floats * sizeof(float);
  } else if (mode == "corename" && argc == 2) {
    openblas_set_num_threads(1);
    const int T = 512, out = 768, in = 512;
    const std::vector<float> x = Filled(static_cast<size_t>(T) * in, 1), W = Filled(static_cast<size_t>(out) * in, 2);
    std::vector<float> y(static_cast<size_t>(T) * out);
    const auto t = Measure([&] { Sgemm(T, out, in, x.data(), W.data(), y.data(), false); }, 0.3);
    result["corename"] = openblas_get_corename();
    result["config"] = openblas_get_config();
    result["gflops"] = 2.0 * T * out * in / t.median / 1e9;
  } else if (mode == "measure" && argc == 5) {
    const int T = std::atoi(argv[2]);
    const int threads = std::atoi(argv[3]);
    const double budget = std::atof(argv[4]);
    if (T < 1 || T > wb::stage03::kBenchLargestT || threads < 1 || threads > 64) return Usage();
    openblas_set_num_threads(threads);
    const std::vector<float> w = Filled(PACKED_FLOATS, 3);
    const std::vector<float> x = Filled(static_cast<size_t>(T) * D, 4);
    const std::vector<float> input = Filled(static_cast<size_t>(T) * F, 5);
    const std::vector<float> ropeCos = Filled(static_cast<size_t>(T) * ROPE_PAIRS, 6);
    const std::vector<float> ropeSin = Filled(static_cast<size_t>(T) * ROPE_PAIRS, 7);
    std::vector<float> y(static_cast<size_t>(T) * F);
    const int offsets[wb::stage03::kBenchShapeCount] = {OFF_WQ, OFF_WO, OFF_WGATE, OFF_WDOWN};
    result["corename"] = openblas_get_corename();
    for (int s = 0; s < wb::stage03::kBenchShapeCount; ++s) {
      const auto shape = wb::stage03::kBenchShapes[s];
      const float* W = w.data() + offsets[s];
      result["sgemm"].push_back(wb::YardstickTimingJson(
          Measure([&] { Sgemm(T, shape.out, shape.in, input.data(), W, y.data(), false); }, budget)));
      // Stage 1's loops have no threads: timed once, on the one-thread run.
      if (threads == 1) {
        result["stage1_loops"].push_back(wb::YardstickTimingJson(
            Measure([&] { StageOneLoops(T, shape.out, shape.in, input.data(), W, y.data()); }, budget)));
      }
    }
    Buffers buffers(T);
    result["openblas_block"] = wb::YardstickTimingJson(Measure(
        [&] { OpenBlasBlock(T, threads, w.data(), x.data(), ropeCos.data(), ropeSin.data(), buffers); }, budget));
  } else {
    return Usage();
  }
  std::printf("%s\n", result.dump().c_str());
  return 0;
}
