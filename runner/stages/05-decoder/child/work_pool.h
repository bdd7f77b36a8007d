// The runner's side of share_out's pool (runner/stages/05-decoder/child/work_pool.cc).
#pragma once

// While on, every call of share_out gives each of its threads a run of tasks that no other
// thread takes (the caller waits for each helper to do its own, as an OpenMP region does), and
// the pool never runs a call alone. The stage-5 harness and the generate program turn it on for
// a decoder's first call only: every helper then meets every product that a later call shares
// out, and kernels that keep per-thread buffers (stage 4's solution does) grow them in that
// call, which is not counted, and not in a decode step, which must not allocate. A product
// of too few bytes to share in a first call (a prompt's rows outweigh a decode step's) is too
// small to share in a decode step too.
void SetEveryThreadTakesItsShare(bool on);
