// Stage 5's provided matrix kernels (contracts/stage05_kernels.h): a product with a
// WeightMatrix of any stored type, built from the stage-3 and stage-4 kernels where the type
// is theirs. Linked into the stage-5 child with whichever stage-3 and stage-4 kernels the
// check asks for (the solutions', or the student's with --kernels mine).
//
// Nothing here allocates: quantized inputs and dequantized weight slices live on the stack,
// in pieces of a bounded size, and threads are shared out by share_out (work_pool.cc), which
// allocates only when a program first asks for more threads. (The stage-3 and
// stage-4 kernels behind them are another matter: the workbook's own still allocate in
// some calls, which stage 5's allocation check will have to allow for or they must lose.)
#include "stage05_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <sys/mman.h>

#include "kernel_bridges.h"
#include "model/files/tensor_types.h"
#include "packed_model.h"

namespace {

using wb::TensorType;
using wb::stage05::FloatMatmul;
using wb::stage05::FloatSwiglu;
using wb::stage05::kQ8BlockBytes;
using wb::stage05::kQuantBlock;
using wb::stage05::QuantMatmul;
using wb::stage05::QuantPack;
using wb::stage05::QuantPackedBytes;
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

// The matrices packed by PackQuantizedWeights: each by the address of its first row's bytes,
// in that order, so a product finds its packed bytes by a binary search, allocating nothing.
struct PackedMatrix {
  const std::byte* first;
  const std::byte* packed;
};
std::vector<PackedMatrix>& PackedMatrices() {
  static std::vector<PackedMatrix> matrices;
  return matrices;
}
const std::byte* FirstRowOf(const WeightMatrix& W, size_t rowBytes) {
  return W.tensor.data.data() + W.firstRow * rowBytes;
}
const std::byte* PackedOf(const WeightMatrix& W, size_t rowBytes) {
  const std::vector<PackedMatrix>& matrices = PackedMatrices();
  const std::byte* first = FirstRowOf(W, rowBytes);
  const auto at = std::lower_bound(matrices.begin(), matrices.end(), first,
                                   [](const PackedMatrix& m, const std::byte* f) { return m.first < f; });
  return at != matrices.end() && at->first == first ? at->packed : nullptr;
}

// Rows [firstRow, firstRow + rows) of W, as matmul_q reads them: y = xq · those rows^T, with the
// packed bytes of W when it was packed (the slice's place in them: packedFirstRow).
void QuantRows(const WeightMatrix& W, size_t rowBytes, uint64_t firstRow, uint64_t rows, int T, const std::byte* xq,
               float* y, Accumulate mode, int threads) {
  QuantMatmul(T, xq, QuantTypeOf(W), FirstRowOf(W, rowBytes) + firstRow * rowBytes, static_cast<int>(rows),
              static_cast<int>(W.cols), y, mode, threads, PackedOf(W, rowBytes), static_cast<int>(firstRow));
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

// A decode step's products are shared out among the threads (share_out) in tasks of whole runs
// of kBandRows output rows: whole groups of any stage-4 kernel's rows, so each row's arithmetic
// is the same whichever thread computes it, and the same for any thread count.
constexpr uint64_t kBandRows = 16;
// A task reads at least this many weight bytes: claiming one costs a shared counter's cache
// line (a fraction of a microsecond), and a task of fewer bytes would cost more to hand out
// than it saves. Below two such tasks a product runs on the calling thread alone, so a small
// model is never slower on more threads than on one.
constexpr uint64_t kTaskBytes = 16 * 1024;
// Up to this many tasks a thread. More and shorter tasks share out better when a helper is
// late or loses its core; fewer and longer ones stream faster when every thread has a core,
// since each task is a matmul_q call that starts its stream of weight rows from cold. Measured
// side by side (the lesson's "Threads on a busy machine"), 2 gave up little of either.
constexpr uint64_t kTasksPerThread = 2;

// The output rows of one task for `total` rows of `rowBytes` each (the bytes a row's outputs
// read, all matrices together) on `threads` threads, in whole bands.
uint64_t TaskRows(uint64_t total, uint64_t rowBytes, int threads) {
  const uint64_t forBytes = (kTaskBytes + rowBytes - 1) / std::max<uint64_t>(rowBytes, 1);
  const uint64_t forBalance = total / (static_cast<uint64_t>(std::max(threads, 1)) * kTasksPerThread);
  const uint64_t rows = std::max(forBytes, forBalance);
  return (rows + kBandRows - 1) / kBandRows * kBandRows;
}

// Calls work(begin, end) on runs of rows that together cover [0, total), shared among
// `threads` threads; one run on the calling thread when the rows hold too few bytes for more.
// A run is at most mostRows rows (a multiple of kBandRows) when a task's buffers need it.
template <typename Work>
void ShareRows(uint64_t total, uint64_t rowBytes, int threads, const Work& work, uint64_t mostRows = UINT64_MAX) {
  const uint64_t perTask = std::min(TaskRows(total, rowBytes, threads), mostRows);
  const int tasks = static_cast<int>((total + perTask - 1) / perTask);
  share_out(tasks, threads, [&](int t) {
    const uint64_t begin = static_cast<uint64_t>(t) * perTask;
    work(begin, std::min(total, begin + perTask));
  });
}

// Floats of products a task keeps on its stack: a run of output rows for every input row of a
// pass. A pass is at most kMostPassRows input rows, so that a run of one band still fits.
constexpr size_t kProductFloats = 16384;
constexpr int kMostPassRows = static_cast<int>(kProductFloats / kBandRows);

// Output rows per task for a pass of `count` input rows: as many as the product buffers hold.
uint64_t MostRunRows(int count) { return kProductFloats / static_cast<size_t>(count) / kBandRows * kBandRows; }

// Products of stage-4 weights by the same input rows, y_i (rows x W_i.rows) = x · W_i^T, all of
// one width. The input rows are quantized once per pass; then every product's rows, one after
// another, are shared out among the threads in one call of share_out, each task one matmul_q
// call with threads = 1 per product it covers. Stage 4's matmul_q could share out one product's
// rows itself, but then it would open an OpenMP region per product, whose end waits for every
// thread of its team, and the short products (k and v are a few hundred rows) are cheaper handed
// out beside a long one than each on its own. matmul_q writes its output rows as many floats
// apart as the rows it was given, so a task's products of several input rows land in a buffer
// of its own first and go to their columns of y from there; one input row (a decode step) goes
// to y directly.
void QuantProducts(std::span<const WeightProduct> products, int rows, const float* x, Accumulate mode, int threads) {
  const WeightMatrix& first = *products.front().W;
  alignas(64) std::byte input[kQuantizedInputBytes];
  const int perPass = std::min(QuantizedRowsAtOnce(first), kMostPassRows);
  uint64_t total = 0;
  uint64_t widestRow = 0;  // the products' types may differ (a file may keep v in Q8_0)
  for (const WeightProduct& p : products) {
    total += p.W->rows;
    widestRow = std::max<uint64_t>(widestRow, RowBytesOf(*p.W));
  }
  for (int r0 = 0; r0 < rows; r0 += perPass) {
    const int count = std::min(perPass, rows - r0);
    QuantizePass(first, x, r0, count, input);
    auto run = [&](uint64_t firstRow, uint64_t lastRow) {
      alignas(64) float runProducts[kProductFloats];  // unused (and untouched) for one input row
      uint64_t base = 0;  // the first row of product p in the run of all of them
      for (const WeightProduct& p : products) {
        const uint64_t begin = std::max(firstRow, base);
        const uint64_t end = std::min(lastRow, base + p.W->rows);
        base += p.W->rows;
        if (begin >= end) continue;
        const uint64_t o0 = begin - (base - p.W->rows);  // the run's first row of W
        const uint64_t width = end - begin;
        if (count == 1) {
          QuantRows(*p.W, RowBytesOf(*p.W), o0, width, 1, input, p.y + static_cast<size_t>(r0) * p.W->rows + o0, mode,
                    1);
          continue;
        }
        QuantRows(*p.W, RowBytesOf(*p.W), o0, width, count, input, runProducts, Accumulate::kOverwrite, 1);
        for (int r = 0; r < count; ++r) {
          float* out = p.y + static_cast<size_t>(r0 + r) * p.W->rows + o0;
          const float* in = runProducts + static_cast<size_t>(r) * width;
          for (uint64_t o = 0; o < width; ++o) out[o] = mode == Accumulate::kAdd ? out[o] + in[o] : in[o];
        }
      }
    };
    ShareRows(total, widestRow * static_cast<uint64_t>(count), threads, run, MostRunRows(count));
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
    const WeightProduct product[] = {{&W, y}};  // QuantProducts, for one product
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
  ShareRows(W.rows, rowBytes * static_cast<uint64_t>(rows), threads, [&](uint64_t first, uint64_t last) {
    for (uint64_t o = first; o < last; ++o) outputRow(static_cast<int>(o));
  });
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
  if (IsStageFourType(type) && IsStageFourType(up.tensor.type)) {
    // The input rows quantized in passes, as in QuantProducts; per pass, the outputs shared out
    // in runs whose gate and up products fit a task's two buffers. A run is one matmul_q call
    // per matrix over all the pass's rows, so a weight byte is read once per pass, not once per
    // input row.
    alignas(64) std::byte quantized[kQuantizedInputBytes];
    const int perPass = std::min(QuantizedRowsAtOnce(gate), kMostPassRows);
    for (int r0 = 0; r0 < rows; r0 += perPass) {
      const int count = std::min(perPass, rows - r0);
      QuantizePass(gate, x, r0, count, quantized);
      auto run = [&](uint64_t first, uint64_t last) {
        alignas(64) float g[kProductFloats];
        alignas(64) float u[kProductFloats];
        const uint64_t outputs = last - first;
        QuantRows(gate, gateRowBytes, first, outputs, count, quantized, g, Accumulate::kOverwrite, 1);
        QuantRows(up, upRowBytes, first, outputs, count, quantized, u, Accumulate::kOverwrite, 1);
        for (int r = 0; r < count; ++r) {
          float* out = y + static_cast<size_t>(r0 + r) * gate.rows + first;
          const float* gr = g + static_cast<size_t>(r) * outputs;
          const float* ur = u + static_cast<size_t>(r) * outputs;
          for (uint64_t f = 0; f < outputs; ++f) out[f] = Activate(act, gr[f]) * ur[f];
        }
      };
      ShareRows(gate.rows, (gateRowBytes + upRowBytes) * static_cast<uint64_t>(count), threads, run,
                MostRunRows(count));
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
  ShareRows(gate.rows, (gateRowBytes + upRowBytes) * static_cast<uint64_t>(rows), threads,
            [&](uint64_t first, uint64_t last) {
              for (uint64_t f = first; f < last; ++f) outputColumn(static_cast<int>(f));
            });
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

void PackQuantizedWeights(const wb::model::ModelWeights& weights) {
  std::vector<const WeightMatrix*> products;
  auto add = [&](const WeightMatrix& W) {
    if (IsStageFourType(W.tensor.type) && W.rows > 0) products.push_back(&W);
  };
  for (const wb::model::LayerWeights& layer : weights.layers) {
    for (const WeightMatrix* W : {&layer.q, &layer.k, &layer.v, &layer.o, &layer.gate, &layer.up, &layer.down,
                                  &layer.router}) {
      add(*W);
    }
    for (const wb::model::ExpertWeights& expert : layer.experts) {
      add(expert.gate);
      add(expert.up);
      add(expert.down);
    }
  }
  add(weights.head);
  std::vector<PackedMatrix>& matrices = PackedMatrices();
  for (const WeightMatrix* W : products) {
    const size_t rowBytes = RowBytesOf(*W);
    const std::byte* first = FirstRowOf(*W, rowBytes);
    if (std::any_of(matrices.begin(), matrices.end(), [&](const PackedMatrix& m) { return m.first == first; })) continue;
    const int rows = static_cast<int>(W->rows), cols = static_cast<int>(W->cols);
    const size_t asked = QuantPackedBytes(QuantTypeOf(*W), first, rows, cols);
    if (asked == 0) return;  // the stage-4 kernels do not take the step
    // The rule of stage04_quant.h: at most twice the matrix's bytes plus 1 MiB.
    const size_t own = rowBytes * W->rows;
    if (asked > 2 * own + (size_t{1} << 20)) {
      Stop(*W, "your stage-4 file's pack_q_bytes asked for " + std::to_string(asked) + " bytes for a matrix of " +
                   std::to_string(own) + ": at most twice its bytes plus 1 MiB may be asked for (stage04_quant.h)");
    }
    // Anonymous memory (zeroed, page-aligned) with transparent huge pages asked for, as the
    // model library reads a model's weights into (Residence::kInMemory): the packed bytes stream
    // by as the weights do, and on 4 KiB pages a decode step paid a TLB miss every 4 KiB of
    // them (bench 5, TinyLlama-shaped Q4_0: slower than the weights in ggml's layout on huge
    // pages). A hint only; never unmapped: the packed bytes live as long as the process.
    const size_t mapped = std::max<size_t>(asked, 1);
    void* memory = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) Stop(*W, "the packed weights do not fit in the memory the child may use");
    ::madvise(memory, mapped, MADV_HUGEPAGE);
    auto* packed = static_cast<std::byte*>(memory);
    QuantPack(QuantTypeOf(*W), first, rows, cols, packed);
    matrices.push_back({first, packed});
  }
  std::sort(matrices.begin(), matrices.end(),
            [](const PackedMatrix& a, const PackedMatrix& b) { return a.first < b.first; });
}
