// Stage 5's provided matrix kernels: products with a model's weights, whatever type the file
// stores them in. Provided code: call it, do not write it (its source is
// runner/stages/05-decoder/child/weight_kernels.cc).
//
// A WeightMatrix (model/config/weight_source.h) is a view of rows x cols values of one
// stored tensor. The kernels dispatch on its type:
//   F32          stage 3's matmul (contracts/stage03_fused.h);
//   Q8_0, Q4_0   the input rows quantized by stage 4's quantize_q8_0, then its matmul_q
//                (contracts/stage04_quant.h): the result is that of the quantized product.
//                The rows are shared out with share_out (below), in runs with enough bytes
//                to be worth a thread, each run one matmul_q call with threads = 1 (a
//                prompt's input rows in passes of at most 1024). When the stage-4 file
//                takes its optional pack_q step, every such matrix is packed once, when the
//                model is opened (before your first call), and each run is a slice of it;
//   any other    (F16, BF16, the K-quants, ...) each weight row dequantized a slice at a time
//                into float, exactly as ggml dequantizes it, and dotted with the input rows.
// By default the stage-3 and stage-4 kernels are the workbook's solutions; with
// `./workbook check 5 --kernels mine` they are yours. The dispatch itself allocates nothing;
// the kernels it calls must not either, for a decode step to allocate nothing.
#pragma once

#include <cstdint>
#include <span>

#include "accumulate.h"
#include "model/config/weight_source.h"
#include "model/switches.h"

// y (rows x W.rows) = x (rows x W.cols) · W^T, or y += that with Accumulate::kAdd.
void weight_matmul(const wb::model::WeightMatrix& W, int rows, const float* x, float* y, Accumulate mode,
                   int threads);

// One input, several products: for each product i, y_i (rows x W_i.rows) = x · W_i^T, overwritten.
// The same values as one weight_matmul per product (q, k and v of a layer); faster where the
// matrices are Q8_0 or Q4_0 of one width: x is quantized once, and all the products' rows are
// shared out in one call of share_out instead of one call a product.
struct WeightProduct {
  const wb::model::WeightMatrix* W;
  float* y;
};
void weight_matmul_same_input(std::span<const WeightProduct> products, int rows, const float* x, int threads);

// y (rows x gate.rows) = act(x · gate^T) ⊙ (x · up^T), element by element, with act SiLU
// (x·sigmoid(x)) or GELU-tanh (0.5x(1 + tanh(√(2/π)(x + 0.044715x³)))). gate and up have the
// same shape.
void weight_matmul_gated(const wb::model::WeightMatrix& gate, const wb::model::WeightMatrix& up,
                         wb::model::Activation act, int rows, const float* x, float* y, int threads);

// out (ids.size() x W.cols) = the rows ids of W as float: an embedding lookup.
void weight_rows(const wb::model::WeightMatrix& W, std::span<const int32_t> ids, float* out);

// Tasks shared among threads: task(context, t) runs once for every t in [0, tasks), on the
// calling thread and on at most threads - 1 of the workbook's helper threads, and share_out
// returns when every task has run. The calling thread waits for the tasks, not for the helpers:
// a helper that the system has not given a core claims no task and is not waited for, so on a
// machine other programs keep busy a call runs at worst at about one thread's speed (an OpenMP
// region waits at its end for every thread of its team). Which thread runs a task changes from
// call to call: a task writes only outputs of its own. A program's first call with a given
// thread count starts the helpers (and allocates); later calls allocate nothing. With one
// thread, or from inside a task, the tasks run on the calling thread, in order.
// (Source: runner/stages/05-decoder/child/work_pool.cc.)
void share_out(int tasks, int threads, void (*task)(void* context, int t), void* context);

// The same with any callable: share_out(tasks, threads, [&](int t) { ... }).
template <typename Task>
void share_out(int tasks, int threads, const Task& task) {
  share_out(
      tasks, threads, [](void* context, int t) { (*static_cast<const Task*>(context))(t); },
      const_cast<void*>(static_cast<const void*>(&task)));
}
