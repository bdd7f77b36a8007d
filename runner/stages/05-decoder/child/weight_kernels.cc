// Stage 5's provided matrix kernels (contracts/stage05_kernels.h): a product with a
// WeightMatrix of any stored type, built from the stage-3 and stage-4 kernels where the type
// is theirs. Linked into the stage-5 child with whichever stage-3 and stage-4 kernels the
// check asks for (the solutions', or the student's with --kernels mine).
//
// Nothing here allocates: quantized inputs and dequantized weight slices live on the stack,
// in pieces of a bounded size, and one thread opens no OpenMP region. (The stage-3 and
// stage-4 kernels behind them are another matter: the workbook's own still allocate in
// some calls, which stage 5's allocation check will have to allow for or they must lose.)
#include "stage05_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <omp.h>

#include "kernel_bridges.h"
#include "model/files/tensor_types.h"

namespace {

using wb::TensorType;
using wb::stage05::FloatMatmul;
using wb::stage05::FloatSwiglu;
using wb::stage05::kQ8BlockBytes;
using wb::stage05::kQuantBlock;
using wb::stage05::QuantMatmul;
using wb::stage05::QuantType;
using wb::stage05::QuantizeQ8_0;
using wb::model::Activation;
using wb::model::WeightMatrix;

// A weight the model library bound must dequantize; if it does not, the file changed under
// the mapping, and the child stops with the library's message.
[[noreturn]] void Stop(const WeightMatrix& W, const std::string& why) {
  std::fprintf(stderr, "weight kernels: %s: %s\n", W.name.c_str(), why.c_str());
  std::abort();
}

size_t RowBytesOf(const WeightMatrix& W) {
  const auto bytes = wb::RowBytes(W.tensor.type, W.cols);
  if (!bytes) Stop(W, bytes.error().message);
  return static_cast<size_t>(*bytes);
}

// Row o of W, bytes [first column, first + count) of it; columns in whole blocks.
std::span<const std::byte> RowSlice(const WeightMatrix& W, size_t rowBytes, uint64_t o, uint64_t first,
                                    uint64_t count) {
  const uint64_t perBlock = wb::BlockElements(W.tensor.type);
  const uint64_t blockBytes = wb::BlockBytes(W.tensor.type);
  const size_t start = (W.firstRow + o) * rowBytes + first / perBlock * blockBytes;
  return W.tensor.data.subspan(start, count / perBlock * blockBytes);
}

// Columns dequantized at a time on the generic path: a multiple of every block size (256).
constexpr uint64_t kSliceColumns = 1024;
// Input rows handled per pass over a weight row on the generic path.
constexpr int kRowGroup = 16;

// out[r][o] for r in [0, rows) = Σ_c x[r][c] · W[o][c], W dequantized slice by slice.
void GenericDots(const WeightMatrix& W, size_t rowBytes, uint64_t o, int rows, const float* x, float* dots) {
  alignas(64) float slice[kSliceColumns];
  for (int r0 = 0; r0 < rows; r0 += kRowGroup) {
    const int group = std::min(kRowGroup, rows - r0);
    float acc[kRowGroup] = {};
    for (uint64_t c0 = 0; c0 < W.cols; c0 += kSliceColumns) {
      const uint64_t count = std::min<uint64_t>(kSliceColumns, W.cols - c0);
      if (auto s = wb::DequantizeRow(W.tensor.type, RowSlice(W, rowBytes, o, c0, count), std::span(slice, count));
          !s.ok()) {
        Stop(W, s.error().message);
      }
      for (int r = 0; r < group; ++r) {
        const float* xr = x + static_cast<size_t>(r0 + r) * W.cols + c0;
        float sum = 0;
        for (uint64_t c = 0; c < count; ++c) sum += xr[c] * slice[c];
        acc[r] += sum;
      }
    }
    for (int r = 0; r < group; ++r) dots[r0 + r] = acc[r];
  }
}

float Activate(Activation act, float g) {
  if (act == Activation::kSilu) return g / (1.0f + std::exp(-g));
  constexpr float kSqrtTwoOverPi = 0.7978845608028654f;
  return 0.5f * g * (1.0f + std::tanh(kSqrtTwoOverPi * (g + 0.044715f * g * g * g)));
}

bool IsStageFourType(TensorType type) { return type == TensorType::kQ8_0 || type == TensorType::kQ4_0; }

QuantType QuantTypeOf(const WeightMatrix& W) {
  return W.tensor.type == TensorType::kQ8_0 ? QuantType::kQ8_0 : QuantType::kQ4_0;
}

// Rows [firstRow, firstRow + rows) of W, as matmul_q reads them: y = xq · those rows^T.
void QuantRows(const WeightMatrix& W, size_t rowBytes, uint64_t firstRow, uint64_t rows, int T, const std::byte* xq,
               float* y, Accumulate mode, int threads) {
  QuantMatmul(T, xq, QuantTypeOf(W), W.tensor.data.data() + (W.firstRow + firstRow) * rowBytes, static_cast<int>(rows),
              static_cast<int>(W.cols), y, mode, threads);
}

// Bytes of quantized input kept on the stack at once: rows of W.cols / QK blocks.
constexpr size_t kQuantizedInputBytes = 96 * 1024;

int QuantizedRowsAtOnce(const WeightMatrix& W) {
  const size_t rowBytes = W.cols / kQuantBlock * kQ8BlockBytes;
  if (rowBytes > kQuantizedInputBytes) {
    Stop(W, "rows longer than " + std::to_string(kQuantizedInputBytes / kQ8BlockBytes * kQuantBlock) +
                " values are beyond the provided kernels");
  }
  return static_cast<int>(kQuantizedInputBytes / rowBytes);
}

// Input rows [first, first + count) of x (W.cols values each) quantized into `quantized`, back to
// back: one pass's input to matmul_q.
void QuantizePass(const WeightMatrix& W, const float* x, int first, int count, std::byte* quantized) {
  const size_t quantizedRowBytes = W.cols / kQuantBlock * kQ8BlockBytes;
  for (int r = 0; r < count; ++r) {
    QuantizeQ8_0(static_cast<int>(W.cols), x + static_cast<size_t>(first + r) * W.cols, quantized + r * quantizedRowBytes);
  }
}

// A decode step's products are shared out among the threads a run of kBandRows output rows at
// a time: whole groups of any stage-4 kernel's rows, so each row's arithmetic is the same
// whichever thread computes it. Thread `thread` of `threads` takes rows [begin, end) of `total`.
constexpr uint64_t kBandRows = 16;
struct RowSpan {
  uint64_t begin;
  uint64_t end;
};
RowSpan ThreadRows(uint64_t total, int thread, int threads) {
  const uint64_t runs = (total + kBandRows - 1) / kBandRows;
  const uint64_t perThread = (runs + threads - 1) / threads;
  const uint64_t begin = std::min(total, static_cast<uint64_t>(thread) * perThread * kBandRows);
  return {begin, std::min(total, begin + perThread * kBandRows)};
}

// Runs share(thread, threads) on each of `threads` threads, in one parallel region; on the
// calling thread alone, with no region, when there is one (see weight_matmul).
template <typename Share>
void OnThreads(int threads, const Share& share) {
  if (threads <= 1) {
    share(0, 1);
    return;
  }
#pragma omp parallel num_threads(threads)
  share(omp_get_thread_num(), omp_get_num_threads());
}

// A decode step's products of stage-4 weights by one input row: the row quantized once, then
// every product's rows, one after another, shared out among the threads in one parallel region,
// each thread calling matmul_q with one thread on its own rows. Stage 4's matmul_q could share
// out one product's rows itself, but then it opens a region per product, and each thread
// would read the activations the calling thread prepared. Here a thread prepares its own, and
// the short products (k and v are a few hundred rows) share a region with a long one: a region
// costs about as much to start and to wait for at its end as a short product takes.
void DecodeStepProducts(std::span<const WeightProduct> products, const float* x, Accumulate mode, int threads) {
  const WeightMatrix& first = *products.front().W;
  alignas(64) std::byte input[kQuantizedInputBytes];
  QuantizedRowsAtOnce(first);  // stops on a row too long for the buffer
  QuantizePass(first, x, 0, 1, input);
  uint64_t total = 0;
  for (const WeightProduct& p : products) total += p.W->rows;
  OnThreads(threads, [&](int thread, int count) {
    const RowSpan mine = ThreadRows(total, thread, count);
    uint64_t base = 0;  // the first row of product p in the run of all of them
    for (const WeightProduct& p : products) {
      const uint64_t begin = std::max(mine.begin, base);
      const uint64_t end = std::min(mine.end, base + p.W->rows);
      if (begin < end) {
        QuantRows(*p.W, RowBytesOf(*p.W), begin - base, end - begin, 1, input, p.y + (begin - base), mode, 1);
      }
      base += p.W->rows;
    }
  });
}

// Products of stage-4 weights by the same input rows, y_i (rows x W_i.rows) = x · W_i^T, all of
// one width: a decode step's as DecodeStepProducts shares them out; a prompt's with each pass
// of input rows quantized once, then one stage-4 call per product, which shares its rows among
// the threads itself (its region is long).
void QuantProducts(std::span<const WeightProduct> products, int rows, const float* x, Accumulate mode, int threads) {
  if (rows == 1) {
    DecodeStepProducts(products, x, mode, threads);
    return;
  }
  const WeightMatrix& first = *products.front().W;
  alignas(64) std::byte input[kQuantizedInputBytes];
  const int perPass = QuantizedRowsAtOnce(first);
  for (int r0 = 0; r0 < rows; r0 += perPass) {
    const int count = std::min(perPass, rows - r0);
    QuantizePass(first, x, r0, count, input);
    for (const WeightProduct& p : products) {
      QuantRows(*p.W, RowBytesOf(*p.W), 0, p.W->rows, count, input, p.y + static_cast<size_t>(r0) * p.W->rows, mode,
                threads);
    }
  }
}

const float* F32Rows(const WeightMatrix& W) {
  const std::byte* start = W.tensor.data.data() + W.firstRow * W.cols * sizeof(float);
  if (reinterpret_cast<uintptr_t>(start) % alignof(float) != 0) return nullptr;  // an unaligned safetensors tensor
  return reinterpret_cast<const float*>(start);
}

}  // namespace

void weight_matmul(const WeightMatrix& W, int rows, const float* x, float* y, Accumulate mode, int threads) {
  const TensorType type = W.tensor.type;
  const size_t rowBytes = RowBytesOf(W);
  // Stage 3's matmul opens an OpenMP region, which GCC's runtime allocates for when it has one
  // thread; one thread takes the plain loops below instead.
  if (type == TensorType::kF32 && F32Rows(W) != nullptr && threads > 1) {
    FloatMatmul(rows, static_cast<int>(W.rows), static_cast<int>(W.cols), x, F32Rows(W), y, mode, threads);
    return;
  }
  if (IsStageFourType(type)) {
    const WeightProduct product[] = {{&W, y}};
    QuantProducts(product, rows, x, mode, threads);
    return;
  }
  auto outputRow = [&](int o) {
    float dots[kRowGroup * 64];
    for (int r0 = 0; r0 < rows; r0 += kRowGroup * 64) {
      const int count = std::min(kRowGroup * 64, rows - r0);
      GenericDots(W, rowBytes, o, count, x + static_cast<size_t>(r0) * W.cols, dots);
      for (int r = 0; r < count; ++r) {
        float& out = y[static_cast<size_t>(r0 + r) * W.rows + o];
        out = mode == Accumulate::kAdd ? out + dots[r] : dots[r];
      }
    }
  };
  const int outputs = static_cast<int>(W.rows);
  // One thread runs no parallel region at all: GCC's OpenMP runtime allocates a team for
  // every one-thread region, and a decode step must not allocate.
  if (threads <= 1) {
    for (int o = 0; o < outputs; ++o) outputRow(o);
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int o = 0; o < outputs; ++o) outputRow(o);
}

void weight_matmul_same_input(std::span<const WeightProduct> products, int rows, const float* x, int threads) {
  if (products.empty()) return;
  const WeightMatrix& first = *products.front().W;
  const bool quantized = std::all_of(products.begin(), products.end(), [&](const WeightProduct& p) {
    return IsStageFourType(p.W->tensor.type) && p.W->cols == first.cols;
  });
  if (!quantized) {
    for (const WeightProduct& p : products) weight_matmul(*p.W, rows, x, p.y, Accumulate::kOverwrite, threads);
    return;
  }
  QuantProducts(products, rows, x, Accumulate::kOverwrite, threads);
}

void weight_matmul_gated(const WeightMatrix& gate, const WeightMatrix& up, Activation act, int rows, const float* x,
                         float* y, int threads) {
  if (gate.rows != up.rows || gate.cols != up.cols) Stop(gate, "gate and up differ in shape");
  const TensorType type = gate.tensor.type;
  if (type == TensorType::kF32 && up.tensor.type == TensorType::kF32 && act == Activation::kSilu &&
      F32Rows(gate) != nullptr && F32Rows(up) != nullptr && threads > 1) {  // one thread: see weight_matmul
    FloatSwiglu(rows, static_cast<int>(gate.rows), static_cast<int>(gate.cols), x, F32Rows(gate), F32Rows(up), y,
                  threads);
    return;
  }
  const size_t gateRowBytes = RowBytesOf(gate);
  const size_t upRowBytes = RowBytesOf(up);
  if (IsStageFourType(type) && IsStageFourType(up.tensor.type) && rows == 1) {
    // A decode step, in one parallel region as DecodeStepProducts's: each thread takes a share
    // of the outputs and forms both products and the activation for it, the gate products
    // straight into y.
    alignas(64) std::byte input[kQuantizedInputBytes];
    QuantizedRowsAtOnce(gate);
    QuantizePass(gate, x, 0, 1, input);
    OnThreads(threads, [&](int thread, int count) {
      constexpr uint64_t kPiece = 8192;  // outputs whose up products fit the stack buffer
      alignas(64) float u[kPiece];
      const RowSpan mine = ThreadRows(gate.rows, thread, count);
      for (uint64_t f0 = mine.begin; f0 < mine.end; f0 += kPiece) {
        const uint64_t outputs = std::min(kPiece, mine.end - f0);
        QuantRows(gate, gateRowBytes, f0, outputs, 1, input, y + f0, Accumulate::kOverwrite, 1);
        QuantRows(up, upRowBytes, f0, outputs, 1, input, u, Accumulate::kOverwrite, 1);
        for (uint64_t f = 0; f < outputs; ++f) y[f0 + f] = Activate(act, y[f0 + f]) * u[f];
      }
    });
    return;
  }
  if (IsStageFourType(type) && IsStageFourType(up.tensor.type)) {
    // A prompt: the input rows quantized in passes, as in weight_matmul; per pass, the outputs
    // in pieces whose gate and up products fit the two stack buffers. Each piece is one
    // matmul_q call per matrix over all the pass's rows, so a weight byte is read once per
    // pass, not once per input row: every call starts its stream of weight rows from cold and,
    // on more than one thread, opens a parallel region, so fewer and longer calls run faster.
    constexpr size_t kProductFloats = 16384;
    alignas(64) std::byte quantized[kQuantizedInputBytes];
    alignas(64) float g[kProductFloats];
    alignas(64) float u[kProductFloats];
    // Rows per pass: as many as the quantized input's buffer holds, and never more than leave a
    // piece of 16 outputs room in the product buffers (count * piece <= kProductFloats).
    constexpr int kMostRows = static_cast<int>(kProductFloats / 16);
    const int perPass = std::min(QuantizedRowsAtOnce(gate), kMostRows);
    for (int r0 = 0; r0 < rows; r0 += perPass) {
      const int count = std::min(perPass, rows - r0);
      QuantizePass(gate, x, r0, count, quantized);
      // Outputs per piece: as many as the buffers hold for `count` rows, a multiple of 16.
      const uint64_t piece = kProductFloats / static_cast<size_t>(count) / 16 * 16;  // >= 16: count <= kMostRows
      for (uint64_t f0 = 0; f0 < gate.rows; f0 += piece) {
        const uint64_t outputs = std::min<uint64_t>(piece, gate.rows - f0);
        QuantRows(gate, gateRowBytes, f0, outputs, count, quantized, g, Accumulate::kOverwrite, threads);
        QuantRows(up, upRowBytes, f0, outputs, count, quantized, u, Accumulate::kOverwrite, threads);
        for (int r = 0; r < count; ++r) {
          float* out = y + static_cast<size_t>(r0 + r) * gate.rows + f0;
          const float* gr = g + static_cast<size_t>(r) * outputs;
          const float* ur = u + static_cast<size_t>(r) * outputs;
          for (uint64_t f = 0; f < outputs; ++f) out[f] = Activate(act, gr[f]) * ur[f];
        }
      }
    }
    return;
  }
  auto outputColumn = [&](int f) {
    float g[kRowGroup * 64];
    float u[kRowGroup * 64];
    for (int r0 = 0; r0 < rows; r0 += kRowGroup * 64) {
      const int count = std::min(kRowGroup * 64, rows - r0);
      GenericDots(gate, gateRowBytes, f, count, x + static_cast<size_t>(r0) * gate.cols, g);
      GenericDots(up, upRowBytes, f, count, x + static_cast<size_t>(r0) * up.cols, u);
      for (int r = 0; r < count; ++r) y[static_cast<size_t>(r0 + r) * gate.rows + f] = Activate(act, g[r]) * u[r];
    }
  };
  const int outputs = static_cast<int>(gate.rows);
  if (threads <= 1) {  // no parallel region: see weight_matmul
    for (int f = 0; f < outputs; ++f) outputColumn(f);
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int f = 0; f < outputs; ++f) outputColumn(f);
}

void weight_rows(const WeightMatrix& W, std::span<const int32_t> ids, float* out) {
  const size_t rowBytes = RowBytesOf(W);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || static_cast<uint64_t>(ids[i]) >= W.rows) {
      Stop(W, "row " + std::to_string(ids[i]) + " of " + std::to_string(W.rows) + " asked for");
    }
    if (auto s = wb::DequantizeRow(W.tensor.type, RowSlice(W, rowBytes, ids[i], 0, W.cols),
                                   std::span(out + i * W.cols, W.cols));
        !s.ok()) {
      Stop(W, s.error().message);
    }
  }
}
