// Stage 4's call layouts (runner/isolation/call_layout.h), shared by the driver and the
// child's harness: a kernel case runs quantize_q8_0 or matmul_q twice on the same inputs,
// and matmul_q a third time on packed weights when the student's file packs them (KernelCall), a block case runs quant_block once (QuantBlockCall), and the leaderboard runs
// matmul_q at T = 1 many times over (LeaderboardCall). Blocks travel as bytes, in ggml's
// layouts (contracts/stage04_quant.h); floats as floats.
#pragma once

#include <array>
#include <cstdint>

#include "runner/isolation/call_layout.h"

namespace wb::stage04 {

// The most the optional pack_q step may take for a matrix of `bytes` bytes (stage04_quant.h):
// the harness refuses more, and the runner raises a child's memory limit by this much for each
// matrix it lays out, so that a file that packs runs where one that does not would.
constexpr uint64_t MostPackedBytes(uint64_t bytes) { return 2 * bytes + (uint64_t{1} << 20); }

// The kernels of the contract, in the order of data/stages.json's "kernels".
enum class Kernel : int32_t { kQuantize, kMatmulQ };
// The contract's WeightType, as the runner and the child exchange it.
enum class Weight : int32_t { kQ8_0, kQ4_0 };

struct KernelCall {
  static constexpr uint32_t kId = LayoutId("04-quant kernel v2");
  enum Buffer : uint32_t {
    // Inputs, read-only. quantize_q8_0: x (T * in floats) and an unused byte in kWeights;
    // matmul_q: xq (T rows of in / 32 Q8_0 blocks) and W (out rows of in / 32 blocks).
    kInput, kWeights,
    // The output of the first run and of the second, from the same inputs and starting
    // contents: blocks for quantize_q8_0, T x out floats for matmul_q.
    kResult, kSecondRun,
    // matmul_q, when the student's file takes the optional pack_q step (stage04_quant.h): a
    // third run, from the same inputs and starting contents, with W packed; and one int32 the
    // harness sets to 1 when it packed (0: the step is not taken, the third run is not made).
    kPackedRun, kPacking,
    kBufferCount
  };
  static constexpr std::array<const char*, kBufferCount> kNames = {"input",     "weights",   "result",
                                                                   "secondRun", "packedRun", "packing"};
  static constexpr uint32_t kFirstOutput = kResult;
  struct Params {
    Kernel kernel;
    int32_t tokens;  // T
    int32_t out;     // matmul_q: W's rows
    int32_t in;      // values per row of x (quantize_q8_0 quantizes T * in values)
    Weight weight;   // matmul_q: W's type
    int32_t accumulate;  // 1: Accumulate::kAdd
    int32_t threads;
  };
};

// The leaderboard's run (check 4 --leaderboard): `calls` products at T = 1, one thread, call c
// on row c of the inputs (in / 32 Q8_0 blocks each) and writing row c of the results (out
// floats each), with copy c % copies of W, so that the weights stream from memory and no call
// has the same input as another.
struct LeaderboardCall {
  static constexpr uint32_t kId = LayoutId("04-quant leaderboard v1");
  enum Buffer : uint32_t { kInputs, kWeights, kResults, kBufferCount };
  static constexpr std::array<const char*, kBufferCount> kNames = {"inputs", "weights", "results"};
  static constexpr uint32_t kFirstOutput = kResults;
  struct Params {
    int32_t calls;
    int32_t copies;
    int32_t out;
    int32_t in;
    Weight weight;
  };
};

struct QuantBlockCall {
  static constexpr uint32_t kId = LayoutId("04-quant quant_block v1");
  enum Buffer : uint32_t {
    // Inputs: the norm weights (floats), the five matrices (blocks), x and the RoPE tables.
    kRms1, kWqkv, kWo, kRms2, kWgate, kWup, kWdown, kX, kRopeCos, kRopeSin,
    // Outputs, in the order the contract computes them.
    kNorm1, kNorm1q, kQkv, kAttnOut, kAttnOutq, kResidual1, kNorm2, kNorm2q, kHidden, kHiddenq, kOutput,
    kBufferCount
  };
  static constexpr std::array<const char*, kBufferCount> kNames = {
      "rms1",   "wqkv",    "wo",        "rms2",  "wgate",  "wup",     "wdown",  "x",      "ropeCos", "ropeSin", "norm1",
      "norm1q", "qkv",     "attnOut",   "attnOutq", "residual1", "norm2", "norm2q", "hidden", "hiddenq", "output"};
  static constexpr uint32_t kFirstOutput = kNorm1;
  // The matrices in the order of their buffers, for the types in Params.
  static constexpr std::array<Buffer, 5> kMatrices = {kWqkv, kWo, kWgate, kWup, kWdown};
  struct Params {
    int32_t tokens;  // T
    int32_t threads;
    Weight types[5];  // of kMatrices, in that order
  };
};

}  // namespace wb::stage04
