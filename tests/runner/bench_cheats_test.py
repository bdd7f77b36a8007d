#!/usr/bin/env python3
"""A student file that cheats the bench gets no figure and a message that says why, or, where
the cheat cannot reach the figure, the figure it earned.

Usage: bench_cheats_test.py WORKBOOK SOURCE_ROOT
  WORKBOOK     the built runner
  SOURCE_ROOT  the workbook's source tree (its solutions/ become a student's stages/ tree)

The student's code is linked into the program it runs in, so it can try two things:
  - skip work once it is being timed: fused_block (stage 3) or quant_block (stage 4) that
    stops working after its second call. It passes every check (each case calls it at most
    twice in one process) and would time as near-free;
  - replace the C library's raise() with one that does nothing, so that the child's stop where
    its timed calls begin would never come;
  - replace the clock: a clock_gettime of its own, which every caller in the program would
    take for the C library's, where a microsecond passes per reading;
  - compute right while it is checked and wrong while it is timed: stage 3's matmul, right on
    its first call at the bench's qkv shape and zeros after, and stage 4's matmul_q, the same
    at its T = 1 shape, each caught by the bench's check of calls drawn at random against the
    reference;
  - memoize: keep what the first call at the bench's shape computed and copy it back on every
    later call with the same input pointer (stage 3's matmul, stage 4's matmul_q at T = 1), a
    memcpy timed as a product. The bench makes new inputs for every timed call (from a seed it
    hands the child only once the untimed call is over), so the copies are wrong.
Each is planted in a copy of the solutions and benched. Stages 2, 3 and 4 time their children
from outside, by the runner's clock (runner/stages/bench_engine.h), give each timed call inputs
of its own and an output slot, and check the last calls' outputs, at calls drawn at random: skipped work is refused there
(in stages 3 and 4; stage 2's checks call decoder_step many times in one process, so there a
file that counts calls fails its checks first), and a fake clock changes nothing, so the bench
must measure and print its table (with no figure above the machine's roof, which stages 3 and
4 would refuse). Stage 5's generate program stops itself around each timed prefill and decode,
and the runner times those spans by its own clock: a decoder that stops its own process in the
middle of a timed decode (to end a span early) is refused for the stops it added, a raise() of
its own changes nothing, and a fake clock is refused by the program (which checks the clock it
sees against the kernel's). A refused bench must exit 1, print no table, and
say which refusal it is. The copy as it is, checked first, passes: so the cheats are what
is refused.
"""
import os, re, shutil, subprocess, sys, tempfile

SKIP_AFTER_TWO_CALLS = "  static int calls = 0;  // planted: works twice, then returns at once\n  if (++calls > 2) return;\n"
# Right on the first call at the bench's shape, zeros on every later one: the first batch's
# timed call is wrong, and only the sample of it checked against the reference can say so.
WRONG_WHEN_TIMED = (
    "  static int timedCalls = 0;  // planted: right once at T = 13, qkv's shape, then zeros\n"
    "  if (T == 13 && out == 768 && ++timedCalls > 1) {\n"
    "    for (int i = 0; i < T * out; ++i) y[i] = 0.0f;\n"
    "    return;\n"
    "  }\n")
# The same in stage 4: matmul_q right on its first call at the bench's T = 1 shape (14336 x 4096),
# zeros after; the bench's sample of the first batch's output must refuse it.
WRONG_WHEN_TIMED_Q = (
    "  static int timedCalls = 0;  // planted: right once at T = 1, 14336 x 4096, then zeros\n"
    "  if (T == 1 && W.rows == 14336 && W.cols == 4096 && ++timedCalls > 1) {\n"
    "    for (int i = 0; i < W.rows; ++i) y[i] = 0.0f;\n"
    "    return;\n"
    "  }\n")
# The first product at the bench's qkv shape (T = 13) kept, and copied back on every later call
# whose input pointer is the same: the bench's timed calls all read one buffer, refilled.
MEMOIZED = (
    "  static const float* keptFor = nullptr;  // planted: the first product for this input pointer,\n"
    "  static std::vector<float> kept;         // copied back on every later call\n"
    "  static bool computing = false;\n"
    "  if (T == 13 && out == 768 && !computing) {\n"
    "    if (keptFor == x) {\n"
    "      std::copy(kept.begin(), kept.end(), y);\n"
    "      return;\n"
    "    }\n"
    "    computing = true;\n"
    "    matmul(T, out, in, x, W, y, mode, threads);\n"
    "    computing = false;\n"
    "    kept.assign(y, y + T * out);\n"
    "    keptFor = x;\n"
    "    return;\n"
    "  }\n")
# The same in stage 4: matmul_q at the bench's T = 1 shape (14336 x 4096), keyed by xq.
MEMOIZED_Q = (
    "  static const BlockQ8_0* keptFor = nullptr;  // planted: the first product for this input pointer,\n"
    "  static std::vector<float> kept;             // copied back on every later call\n"
    "  static bool computing = false;\n"
    "  if (T == 1 && W.rows == 14336 && W.cols == 4096 && !computing) {\n"
    "    if (keptFor == xq) {\n"
    "      std::copy(kept.begin(), kept.end(), y);\n"
    "      return;\n"
    "    }\n"
    "    computing = true;\n"
    "    matmul_q(T, xq, W, y, mode, threads);\n"
    "    computing = false;\n"
    "    kept.assign(y, y + W.rows);\n"
    "    keptFor = xq;\n"
    "    return;\n"
    "  }\n")
FAKE_CLOCK = """
#include <time.h>
// planted: a clock of its own, a microsecond per reading, for every caller in the program
extern "C" int clock_gettime(clockid_t, struct timespec* ts) {
  static long long fake = 0;
  fake += 1000;
  ts->tv_sec = fake / 1000000000;
  ts->tv_nsec = fake % 1000000000;
  return 0;
}
"""
# A raise() of its own that does nothing: the bench child stops itself where its timed calls
# begin, and a stop asked of the C library could be dropped (the bench would then say its child
# never started its timed calls, and blame the workbook) or made later, where the runner's clock
# would miss some of the calls. The harness asks the kernel directly, so this changes nothing.
NO_RAISE = """
#include <signal.h>
// planted: raise() does nothing, for every caller in the program
extern "C" int raise(int) { return 0; }
"""
# A decoder that stops its own process on its 100th call, in the middle of the first timed
# decode of the bench's KJV run: the runner would take that stop for the span's end.
STOPS_ITSELF_INCLUDES = "#include <signal.h>\n#include <unistd.h>\n"
STOPS_ITSELF = (
    "  static int calls = 0;  // planted: a stop of its own in the middle of a timed decode\n"
    "  if (++calls == 100) kill(getpid(), SIGSTOP);\n")
STOPPED = "stopped its own process while it was timed"
SKIPPED = "was never written: each timed call has an output slot"
WRONG = "the bench checks what calls drawn at random wrote, on inputs made for each timed call, and this one is wrong"
CLOCK = "disagreed with the system's"
MEASURED = None  # the cheat cannot reach the figure: the bench measures, exit 0, with its table


def printed_figures(stage, stdout):
    """Whether the bench printed figures: stage 2 streams a row per context length (a time and
    a run count), stages 3 and 4 print their tables, headed "Stage N bench:", at the end."""
    if stage == "2":
        return re.search(r"^\s*\d+\s+[\d.]+ (ms|s|us|µs)\s+\d+", stdout, re.M) is not None
    if stage == "5":
        return re.search(r"model-q8_0\.gguf\s+\d+\s+[\d.]+ \(", stdout) is not None
    return f"Stage {stage} bench:" in stdout


def tree_with(source, stage_dir, file, change):
    tree = tempfile.mkdtemp(prefix="wb-cheat-")
    shutil.copytree(os.path.join(source, "stages", stage_dir), os.path.join(tree, stage_dir))
    solution = os.path.join(source, "solutions", stage_dir)
    for name in os.listdir(solution):  # every file of the solution (stage 5's decoder has parts)
        shutil.copy(os.path.join(solution, name), os.path.join(tree, stage_dir, name))
    path = os.path.join(tree, stage_dir, file)
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(change(text))
    return tree


def after_signature(function_line_end, planted=SKIP_AFTER_TWO_CALLS):
    def change(text):
        if function_line_end not in text:  # asked for its name alone (main): what it plants
            return planted
        at = text.index(function_line_end) + len(function_line_end)
        return text[:at] + planted + text[at:]
    return change


def main():
    workbook, source = sys.argv[1], sys.argv[2]
    failures = []
    plants = [
        ("2", "02-kv-cache", "decode.cc", lambda text: text + FAKE_CLOCK, MEASURED, ["--contexts", "64"]),
        ("3", "03-fused", "fused.cc", after_signature("float* norm2, float* hidden, float* output) {\n"), SKIPPED,
         ["--tokens", "16"]),
        ("3", "03-fused", "fused.cc", lambda text: text + FAKE_CLOCK, MEASURED, ["--tokens", "16"]),
        ("3", "03-fused", "fused.cc", lambda text: text + NO_RAISE, MEASURED, ["--tokens", "16"]),
        ("3", "03-fused", "fused.cc",
         after_signature("const float* W, float* y, Accumulate mode, int threads) {\n", WRONG_WHEN_TIMED), WRONG,
         ["--tokens", "13"]),
        ("3", "03-fused", "fused.cc",
         after_signature("const float* W, float* y, Accumulate mode, int threads) {\n", MEMOIZED), WRONG,
         ["--tokens", "13"]),
        ("4", "04-quant", "quant.cc", after_signature("float* hidden, BlockQ8_0* hiddenq, float* output) {\n"),
         SKIPPED, []),
        ("4", "04-quant", "quant.cc",
         after_signature("float* y, Accumulate mode, int threads) {\n", WRONG_WHEN_TIMED_Q), WRONG, []),
        ("4", "04-quant", "quant.cc",
         after_signature("float* y, Accumulate mode, int threads) {\n", MEMOIZED_Q), WRONG, []),
        ("5", "05-decoder", "decoder.cc",
         lambda text: STOPS_ITSELF_INCLUDES + after_signature(
             "const DecoderBuffers& buffers, int threads) {\n", STOPS_ITSELF)(text), STOPPED,
         ["--mine", "--model", os.path.join(source, "data/models/kjv-llama-2m/model-q8_0.gguf")]),
        ("5", "05-decoder", "decoder.cc", lambda text: text + NO_RAISE, MEASURED,
         ["--mine", "--model", os.path.join(source, "data/models/kjv-llama-2m/model-q8_0.gguf")]),
        ("5", "05-decoder", "decoder.cc", lambda text: text + FAKE_CLOCK, CLOCK,
         ["--mine", "--model", os.path.join(source, "data/models/kjv-llama-2m/model-q8_0.gguf")]),
    ]
    for stage, stage_dir, file, change, expected, extra in plants:
        tree = tree_with(source, stage_dir, file, change)
        planted = change("")
        name = f"stage {stage}, " + ("no raise" if NO_RAISE in planted else "fake clock" if FAKE_CLOCK in planted
                                     else "memoized" if "keptFor" in planted
                                     else "stops itself" if "SIGSTOP" in planted
                                     else {SKIPPED: "skipped work", WRONG: "wrong when timed"}[expected])
        try:
            checked = subprocess.run([workbook, "check", stage, "--stages-dir", tree], capture_output=True, text=True)
            if checked.returncode != 0:
                failures.append(f"{name}: the planted file should pass check {stage}, got {checked.returncode}:\n"
                                f"{checked.stdout[-2000:]}")
                continue
            budget = [] if stage == "5" else ["--budget", "0.02"]  # bench 5's --budget is a count of runs
            ran = subprocess.run([workbook, "bench", stage, "--stages-dir", tree] + budget + extra,
                                 capture_output=True, text=True)
            out = ran.stdout + ran.stderr
            if expected is MEASURED:
                if ran.returncode != 0 or not printed_figures(stage, ran.stdout):
                    failures.append(f"{name}: expected the bench to measure (exit 0, its table), got "
                                    f"{ran.returncode}:\n{out[-3000:]}")
            elif ran.returncode != 1 or expected not in out:
                failures.append(f"{name}: expected exit 1 and '{expected}', got {ran.returncode}:\n{out[-3000:]}")
            elif printed_figures(stage, ran.stdout):
                failures.append(f"{name}: the bench printed its table as well as the refusal")
        finally:
            shutil.rmtree(tree, ignore_errors=True)
    for f in failures:
        print("FAIL", f)
    print(f"bench_cheats_test: {len(plants) - len(failures)} of {len(plants)} cheats refused or without effect")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
