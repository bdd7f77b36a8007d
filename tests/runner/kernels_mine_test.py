#!/usr/bin/env python3
"""`check 5 --kernels mine` runs a student's own stage-3 and stage-4 kernels, and blames them.

Usage: kernels_mine_test.py WORKBOOK SOURCE_ROOT
  WORKBOOK     the built runner (workbook-decoder beside it, for stage 5)
  SOURCE_ROOT  the workbook's source tree (its solutions/ become a student's stages/ tree)

Stage 5's visible suite has toy models whose matrices are Q8_0, Q4_0 and F32 (two threads),
so the provided weight_matmul hands their products to stage 4's quantize_q8_0 and matmul_q
and to stage 3's matmul and matmul_swiglu. With --kernels mine those are the student's. Four
trees of the solutions, each checked with --kernels mine:
  - as they are: every case passes;
  - a stage-4 matmul_q off on Q4_0 matrices: only the Q4_0 case fails, and its headline says
    the kernels are what is wrong (the same case passes on the provided ones) and names
    matmul_q;
  - a stage-3 matmul off on more than one thread: the F32 two-thread case fails, blamed on
    matmul;
  - a decoder slip (RoPE skipped) with correct kernels: cases fail, and none is blamed on the
    kernels.
"""
import json, os, shutil, subprocess, sys, tempfile

# Each plant: (file under the tree, text that must be there, what replaces it).
Q4_0_SLIP = ("04-quant/quant.cc",
             "  MatmulQThreaded(T, xq, W, y, mode, threads);\n#endif\n",
             "  MatmulQThreaded(T, xq, W, y, mode, threads);\n#endif\n"
             "  if (W.type == WeightType::kQ4_0) y[0] += 0.5f;  // planted: one output off on Q4_0\n")
THREADED_MATMUL_SLIP = ("03-fused/fused.cc",
                        "void matmul(int T, int out, int in, const float* x, const float* W, float* y, "
                        "Accumulate mode, int threads) {\n",
                        "void matmul(int T, int out, int in, const float* x, const float* W, float* y, "
                        "Accumulate mode, int threads) {\n"
                        "  struct Planted { float* y; int threads; ~Planted() { if (threads > 1) y[0] += 0.5f; } } "
                        "planted{y, threads};  // planted: one output off on threads\n")


def plant(tree, slip):
    path = os.path.join(tree, slip[0])
    text = open(path).read()
    if slip[1] not in text:
        raise SystemExit(f"FAIL: {slip[0]} of the solutions no longer has the text this test plants a slip "
                         f"at:\n{slip[1]}")
    open(path, "w").write(text.replace(slip[1], slip[2], 1))


def planted_bug_slip(source, name):
    """The one find/replace of tests/planted/stage05/NAME.bug, as (find, replace)."""
    lines = open(os.path.join(source, "tests/planted/stage05", name + ".bug")).read().split("\n")
    find, replace, part = [], [], None
    for line in lines:
        if line == "--- find":
            part = find
        elif line == "--- replace":
            part = replace
        elif part is not None:
            part.append(line)
    return "\n".join(find).rstrip("\n") + "\n", "\n".join(replace).rstrip("\n") + "\n"


def check(workbook, tree):
    ran = subprocess.run([workbook, "check", "5", "--stages-dir", tree, "--kernels", "mine", "--format", "json"],
                         capture_output=True, text=True, timeout=1200)
    try:
        report = json.loads(ran.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"FAIL: check 5 --kernels mine printed no JSON report (exit {ran.returncode}):\n"
                         f"{ran.stdout[-2000:]}\n{ran.stderr[-2000:]}")
    failing = {c["name"]: c.get("headline") or "" for c in report["cases"] if c["status"] != "pass"}
    return ran.returncode, failing


def main():
    workbook, source = sys.argv[1], sys.argv[2]
    failures = []
    root = tempfile.mkdtemp(prefix="wb-kernels-mine-")

    def tree_of_solutions(name):
        tree = os.path.join(root, name)
        for stage_dir in ("03-fused", "04-quant", "05-decoder"):
            shutil.copytree(os.path.join(source, "solutions", stage_dir), os.path.join(tree, stage_dir))
        return tree

    try:
        code, failing = check(workbook, tree_of_solutions("correct"))
        if code != 0 or failing:
            failures.append(f"the solutions' kernels under --kernels mine: exit {code}, failing {sorted(failing)}")
        else:
            print("ok: the solutions' own kernels pass every case under --kernels mine")

        # (tree name, slip, what it is, the case that must fail, whether only it, the kernel named)
        for name, slip, what, case, only, kernel in (
                ("q4_0-slip", Q4_0_SLIP, "a matmul_q off on Q4_0", "llama-gguf-q4_0", True, "matmul_q"),
                ("threaded-matmul-slip", THREADED_MATMUL_SLIP, "a matmul off on two threads",
                 "llama-gguf-f32-2threads", False, "matmul and matmul_swiglu")):
            tree = tree_of_solutions(name)
            plant(tree, slip)
            code, failing = check(workbook, tree)
            headline = failing.get(case, "")
            if code != 1 or case not in failing or (only and set(failing) != {case}):
                failures.append(f"{what}: exit {code}, failing {sorted(failing)}, "
                                f"not {'exactly' if only else 'including'} {case}")
            elif "your kernels are what is wrong" not in headline or kernel not in headline:
                failures.append(f"{what} is not blamed on the kernel by name: {headline!r}")
            else:
                print(f"ok: {what} fails {case}{' only' if only else ''}: {headline}")

        tree = tree_of_solutions("decoder-slip")
        find, replace = planted_bug_slip(source, "rope-skipped")
        holder = [name for name in sorted(os.listdir(os.path.join(tree, "05-decoder")))
                  if find in open(os.path.join(tree, "05-decoder", name)).read()]
        plant(tree, (os.path.join("05-decoder", holder[0] if holder else "decoder.cc"), find, replace))
        code, failing = check(workbook, tree)
        blamed = [name for name, text in failing.items() if "your kernels" in text]
        if code != 1 or not failing or blamed:
            failures.append(f"a decoder slip with correct kernels: exit {code}, {len(failing)} failing, "
                            f"blamed on the kernels: {blamed}")
        else:
            print(f"ok: a decoder slip fails {len(failing)} cases, none blamed on the kernels")
    finally:
        shutil.rmtree(root, ignore_errors=True)

    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
