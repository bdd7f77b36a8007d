#!/usr/bin/env python3
"""Stage 4's optional pack_q step (contracts/stage04_quant.h): the runner works with it and
without it, checks the packed product as a checkpoint of its own, and stops a file that takes
the step wrongly with a message that names the mistake.

Usage: pack_step_test.py WORKBOOK SOURCE_ROOT
  WORKBOOK     the built runner
  SOURCE_ROOT  the workbook's source tree (its solutions/ become a student's stages/ tree)

Each file is the solution's quant.cc, changed:
  - as it is: every case passes, each with two checkpoints (matmul_q, and matmul_q with packed
    weights);
  - without pack_q_bytes and pack_q: every case passes, each with one checkpoint;
  - pack_q_bytes without pack_q: the check fails, saying the file defines one and not the other;
  - pack_q_bytes asking for more than twice the matrix's bytes plus 1 MiB: fails, saying so;
  - pack_q that lays the rows out wrong: the packed checkpoint fails while the product from
    ggml's layout passes (the runner checks both), and `hint 4` gives matmul_q's hints.
And stage 5, whose provided kernels pack a model's matrices with the stage-4 file's step:
  - the solutions as they are, with --kernels mine: a Q4_0 case passes;
  - the same with that wrong pack_q: the case fails, and the report blames the kernels.
"""
import json, os, shutil, subprocess, sys, tempfile

CASES = {"stage": 4, "cases": [
    {"name": "q4", "kernel": "matmul_q", "weights": "q4_0", "T": 1, "out": 20, "in": 96, "seed": 1},
    {"name": "q8", "kernel": "matmul_q", "weights": "q8_0", "T": 2, "out": 17, "in": 64, "seed": 2, "threads": 2},
]}

PACK_BYTES = "size_t pack_q_bytes(const QuantMatrix& W) {"
PACK = "void pack_q(const QuantMatrix& W, void* packed) {"
LANE = "out[32 + 64 * v + 4 * r + k]"


def without(text, signature, rename):
    assert signature in text, signature
    return text.replace(signature, signature.replace(signature.split("(")[0].split()[-1], rename), 1)


PLANTS = [
    # (what, change, expected exit status, text the output must hold, text it must not hold)
    ("the solution", lambda t: t, 0, "Every checkpoint passes: 4 in 2 cases", None),
    ("a file that does not pack",
     lambda t: without(without(t, PACK_BYTES, "PackedBytesUnused"), PACK, "PackUnused"), 0,
     "Every checkpoint passes: 2 in 2 cases",
     "packed weights"),
    ("a file with pack_q_bytes but no pack_q", lambda t: without(t, PACK, "PackUnused"), 1,
     "defines pack_q_bytes but not pack_q", None),
    ("a file that asks for too many bytes",
     lambda t: t.replace(PACK_BYTES + " return PackedBytes(W); }",
                         PACK_BYTES + " return 3 * PackedBytes(W) + (size_t{2} << 20); }"), 1,
     "at most twice its bytes plus 1 MiB", None),
    ("a file that packs the rows wrong", lambda t: t.replace(LANE, "out[32 + 64 * v + 4 * k + r]"), 1,
     "matmul_q, packed weights", None),
]


STAGE5_CASES = {"stage": 5, "cases": [
    {"name": "q4", "model": "llama", "format": "gguf", "variant": "q4_0", "steps": [3, 1, 1], "seed": 1,
     "page_size": 4},
]}


def stage5(workbook, source, scratch, cases, what, change, status, must):
    """check 5 --kernels mine on a copy of the solutions whose stage-4 file is changed."""
    tree = os.path.join(scratch, "stage5-" + what.replace(" ", "-"))
    for stage_dir in ("03-fused", "04-quant", "05-decoder"):
        shutil.copytree(os.path.join(source, "solutions", stage_dir), os.path.join(tree, stage_dir))
    path = os.path.join(tree, "04-quant", "quant.cc")
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(change(text))
    ran = subprocess.run([workbook, "check", "5", "--kernels", "mine", "--cases", cases, "--stages-dir", tree],
                         capture_output=True, text=True)
    said = ran.stdout + ran.stderr
    if ran.returncode != status:
        return [f"stage 5, {what}: expected exit {status}, got {ran.returncode}\n{said[-3000:]}"]
    if must not in said:
        return [f"stage 5, {what}: the output lacks {must!r}\n{said[-3000:]}"]
    return []


def main():
    workbook, source = sys.argv[1], sys.argv[2]
    failures = []
    scratch = tempfile.mkdtemp(prefix="wb-pack-step-")
    try:
        cases = os.path.join(scratch, "cases.json")
        with open(cases, "w") as f:
            json.dump(CASES, f)
        with open(os.path.join(source, "solutions", "04-quant", "quant.cc")) as f:
            solution = f.read()
        for what, change, status, must, must_not in PLANTS:
            changed = change(solution)
            if what != "the solution" and changed == solution:
                failures.append(f"{what}: the change did not apply (the solution's text moved)")
                continue
            tree = os.path.join(scratch, what.replace(" ", "-"))
            shutil.copytree(os.path.join(source, "solutions", "04-quant"), os.path.join(tree, "04-quant"))
            with open(os.path.join(tree, "04-quant", "quant.cc"), "w") as f:
                f.write(changed)
            ran = subprocess.run([workbook, "check", "4", "--verbose", "--cases", cases, "--stages-dir", tree],
                                 capture_output=True, text=True)
            said = ran.stdout + ran.stderr
            if ran.returncode != status:
                failures.append(f"{what}: expected exit {status}, got {ran.returncode}\n{said[-3000:]}")
            elif must not in said:
                failures.append(f"{what}: the output lacks {must!r}\n{said[-3000:]}")
            elif must_not is not None and must_not in said:
                failures.append(f"{what}: the output holds {must_not!r}\n{said[-3000:]}")
            if what == "a file that packs the rows wrong" and ran.returncode == status:
                # The product from ggml's layout still passes: the first failing checkpoint is the packed one.
                lines = [l for l in said.splitlines() if l.strip().startswith(("ok", "FAIL", "fail"))]
                if not any(l.strip().startswith("ok") and "matmul_q " in l and "packed" not in l for l in lines):
                    failures.append(f"{what}: the product from ggml's layout should pass\n{said[-3000:]}")
                # `hint` reads the failing packed run as matmul_q's checkpoint (the visible suite's
                # first failure), with its own count of hints shown.
                hinted = subprocess.run([workbook, "hint", "4", "--stages-dir", tree], capture_output=True, text=True,
                                        env=dict(os.environ, WORKBOOK_HINT_STATE=os.path.join(scratch, "hints.json")))
                if hinted.returncode != 0 or "Hints for matmul_q (stage 4)" not in hinted.stdout:
                    failures.append(f"{what}: hint 4 should give matmul_q's hints, exit 0; got {hinted.returncode}\n"
                                    f"{(hinted.stdout + hinted.stderr)[-3000:]}")
        stage5_cases = os.path.join(scratch, "stage5.json")
        with open(stage5_cases, "w") as f:
            json.dump(STAGE5_CASES, f)
        failures += stage5(workbook, source, scratch, stage5_cases, "the solutions", lambda t: t, 0,
                           "Every checkpoint passes")
        failures += stage5(workbook, source, scratch, stage5_cases, "a wrong pack_q",
                           lambda t: t.replace(LANE, "out[32 + 64 * v + 4 * k + r]"), 1, "your kernels are what is wrong")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for f in failures:
        print("FAIL", f)
    print(f"pack_step_test: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
