// Accumulate: the mode every matmul of the contracts takes (stages 3 and 4).
//
// Whether a matmul writes its result or adds it to what y already holds. kAdd is how a
// residual connection costs nothing: y starts as a copy of the stream and the projection is
// added into it, with no separate buffer and no second pass over memory.
#pragma once

enum class Accumulate { kOverwrite, kAdd };
