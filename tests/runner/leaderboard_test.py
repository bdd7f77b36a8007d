#!/usr/bin/env python3
"""The Gradescope leaderboards of stages 4 and 5 (`check N --leaderboard`): a passing file is
ranked by its speed, a failing one at 0, and a file that passes every check but cheats in the
leaderboard's own run is ranked at 0 too.

Usage: leaderboard_test.py WORKBOOK SOURCE_ROOT
  WORKBOOK     the built runner
  SOURCE_ROOT  the workbook's source tree (its solutions/ become a student's stages/ tree)

The leaderboard runs the student's code in a child on a run of its own (stage 4: matmul_q at
T = 1 on a 14336 x 4096 matrix, 204 calls; stage 5: the workbook's model, a prompt and 255
decode steps), timed by the runner from outside the child and checked like a case. The checks
here use a one-case suite (--cases) so that the planted files pass them quickly: what is
tested is the leaderboard's run. Planted, each in a copy of the solutions:
  - stage 4, matmul_q that stops working on a large matrix after 8 calls (no case has a
    matrix that large, so it passes every check): the unchecked calls leave their rows
    unwritten;
  - stage 4, matmul_q that computes a large product once and then copies that answer: every
    row is written, but the calls the runner samples after the run are wrong;
  - stage 5, decoder_forward that stops working after 64 calls.
No speed is judged: a figure only has to be a positive number.
"""
import json, os, shutil, subprocess, sys, tempfile

SKIP_LARGE = ("  static long calls = 0;  // planted: a large product works 8 times, then returns at once\n"
              "  if (W.rows > 8192 && ++calls > 8) return;\n")
COPY_LARGE = """
// planted: a large product at T = 1 is computed once, then its answer is copied
void matmul_q(int T, const BlockQ8_0* xq, const QuantMatrix& W, float* y, Accumulate mode, int threads) {
  static std::vector<float> last;
  if (W.rows > 8192 && T == 1 && last.size() == static_cast<size_t>(W.rows)) {
    std::copy(last.begin(), last.end(), y);
    return;
  }
  MatmulQComputed(T, xq, W, y, mode, threads);
  if (W.rows > 8192 && T == 1) last.assign(y, y + W.rows);
}
"""
SKIP_DECODER = "  static int calls = 0;  // planted: works 64 times, then returns at once\n  if (++calls > 64) return;\n"

MATMUL_Q = "void matmul_q(int T, const BlockQ8_0* xq, const QuantMatrix& W, float* y, Accumulate mode, int threads) {\n"
DECODER_FORWARD = ("void decoder_forward(const Model& model, KvCache& cache, std::span<const int32_t> tokens, "
                   "Logits logits,\n                     const DecoderBuffers& buffers, int threads) {\n")

CASES = {
    "4": {"stage": 4, "cases": [{"name": "one", "kernel": "matmul_q", "weights": "q4_0", "T": 2, "out": 16,
                                  "in": 64, "seed": 1}]},
    "5": {"stage": 5, "cases": [{"name": "one", "model": "llama", "format": "gguf", "steps": [3, 1, 1],
                                  "seed": 1, "page_size": 4}]},
}
NAMES = {
    "4": ["matmul_q GOP/s (Q4_0, T=1, 14336 x 4096, 1 thread)", "matmul_q GOP/s (Q8_0, T=1, 14336 x 4096, 1 thread)"],
    "5": ["decode tokens/s (kjv-llama-2m Q8_0, 255 steps, 1 thread)"],
}


def insert_after(marker, addition):
    def change(text):
        at = text.index(marker) + len(marker)
        return text[:at] + addition + text[at:]
    return change


def rename_and_wrap(text):
    renamed = text.replace(MATMUL_Q, MATMUL_Q.replace("void matmul_q(", "static void MatmulQComputed("), 1)
    return "#include <algorithm>\n#include <vector>\n" + renamed + COPY_LARGE


def tree_with(source, stage_dir, file, change):
    tree = tempfile.mkdtemp(prefix="wb-leaderboard-")
    shutil.copytree(os.path.join(source, "solutions", stage_dir), os.path.join(tree, stage_dir))
    path = os.path.join(tree, stage_dir, file)
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(change(text))
    return tree


def board(workbook, stage, cases, extra):
    ran = subprocess.run([workbook, "check", stage, "--format", "gradescope", "--leaderboard", "--cases", cases] + extra,
                         capture_output=True, text=True)
    try:
        report = json.loads(ran.stdout)
    except json.JSONDecodeError:
        return ran.returncode, None, ran.stdout[-2000:] + ran.stderr[-2000:]
    return ran.returncode, report.get("leaderboard"), ran.stderr[-2000:]


def main():
    workbook, source = sys.argv[1], sys.argv[2]
    failures = []
    scratch = tempfile.mkdtemp(prefix="wb-leaderboard-cases-")
    files = {}
    for stage, cases in CASES.items():
        files[stage] = os.path.join(scratch, f"stage{stage}.json")
        with open(files[stage], "w") as f:
            json.dump(cases, f)
    try:
        # The solution: ranked, by a positive figure under each name; the starter: at 0.
        for stage in CASES:
            status, entries, said = board(workbook, stage, files[stage], ["--solutions"])
            if status != 0 or entries is None or [e["name"] for e in entries] != NAMES[stage]:
                failures.append(f"stage {stage}, the solution: expected exit 0 and {NAMES[stage]}, got {status}, "
                                f"{entries}\n{said}")
            elif not all(e["value"] > 0 for e in entries):
                failures.append(f"stage {stage}, the solution: a figure is not positive: {entries}")
            status, entries, said = board(workbook, stage, files[stage], [])
            if status != 1 or entries is None or any(e["value"] != 0 for e in entries):
                failures.append(f"stage {stage}, the starter: expected exit 1 and every figure 0, got {status}, "
                                f"{entries}\n{said}")
        plants = [
            ("4", "04-quant", "quant.cc", insert_after(MATMUL_Q, SKIP_LARGE), "skips calls"),
            ("4", "04-quant", "quant.cc", rename_and_wrap, "copies its first answer"),
            ("5", "05-decoder", "decoder.cc", insert_after(DECODER_FORWARD, SKIP_DECODER), "skips calls"),
        ]
        for stage, stage_dir, file, change, what in plants:
            tree = tree_with(source, stage_dir, file, change)
            try:
                status, entries, said = board(workbook, stage, files[stage], ["--stages-dir", tree])
                if status != 0 or entries is None:
                    failures.append(f"stage {stage}, a file that {what}: it should pass the check, got {status}\n{said}")
                elif [e["name"] for e in entries] != NAMES[stage] or any(e["value"] != 0 for e in entries):
                    failures.append(f"stage {stage}, a file that {what}: expected every figure 0, got {entries}")
            finally:
                shutil.rmtree(tree, ignore_errors=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for f in failures:
        print("FAIL", f)
    print(f"leaderboard_test: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
