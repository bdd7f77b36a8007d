#!/usr/bin/env python3
"""`list` is right for every stage, and remembers the last check without going stale.

Usage: list_test.py WORKBOOK SOURCE_ROOT
  WORKBOOK     the built runner (workbook-decoder beside it, for stage 5)
  SOURCE_ROOT  the workbook's source tree (its solutions/ become a student's stages/ tree)

A stages/ tree made of every solution must list as N / N checkpoints, "done", for every stage
that is available: each checkpoint of data/stages.json counts somewhere (stage 5's experts
only in its mixture-of-experts cases, its cacheOtherRows per layer). A second `list` must
print the same lines from what the first one left (the memo files beside the builds); after
stage 1's file becomes the starter, stage 1 must read "not started" and the others stay done;
and a plain `check 1` of that tree must leave the line that `list` then prints.
"""
import glob, json, os, re, shutil, subprocess, sys, tempfile


def run(workbook, *args):
    ran = subprocess.run([workbook, *args], capture_output=True, text=True, timeout=1800)
    return ran.returncode, ran.stdout, ran.stderr


def stage_lines(out):
    lines = {}
    for line in out.splitlines():
        m = re.match(r"^  (\d)  (.*)$", line)
        if m:
            lines[int(m.group(1))] = m.group(2)
    return lines


def main():
    workbook, source = sys.argv[1], sys.argv[2]
    table = json.load(open(os.path.join(source, "data/stages.json")))
    stages = [s for s in table["stages"] if s.get("available", True)]
    failures = []
    tree = tempfile.mkdtemp(prefix="wb-list-")
    try:
        for stage in stages:
            shutil.copytree(os.path.join(source, "solutions", stage["dir"]), os.path.join(tree, stage["dir"]))
        code, out, err = run(workbook, "list", "--stages-dir", tree)
        first = stage_lines(out)
        if code != 0:
            failures.append(f"list exited {code}: {err}")
        for stage in stages:
            n = stage["number"]
            names = len(stage.get("kernels", [])) + len(stage["checkpoints"]) + len(stage.get("case_checkpoints", []))
            line = first.get(n, "(no line)")
            want = f"{names} / {names:<2} checkpoints"
            if want not in line or not line.rstrip().endswith("done"):
                failures.append(f"stage {n}: the solutions list as '{line}', not '{want} ... done'")
            else:
                print(f"ok stage {n}: {line.strip()}")

        memos = glob.glob(os.path.join(os.path.dirname(workbook), "student", "progress-stage*.json"))
        if len(memos) < len(stages):
            failures.append(f"list left {len(memos)} memo files beside the builds, fewer than {len(stages)} stages")
        code, out, _ = run(workbook, "list", "--stages-dir", tree)
        if stage_lines(out) != first:
            failures.append(f"a second list differs from the first:\n{out}")
        else:
            print("ok a second list prints the same lines")

        stage1 = next(s for s in stages if s["number"] == 1)
        shutil.copy(os.path.join(source, "stages", stage1["dir"], stage1["file"]),
                    os.path.join(tree, stage1["dir"], stage1["file"]))
        code, out, _ = run(workbook, "list", "--stages-dir", tree)
        after = stage_lines(out)
        if "not started" not in after.get(1, ""):
            failures.append(f"after stage 1 became the starter, list says '{after.get(1)}' (a stale memo?)")
        for stage in stages[1:]:
            if after.get(stage["number"]) != first.get(stage["number"]):
                failures.append(f"stage {stage['number']} changed when only stage 1's file did: {after.get(stage['number'])}")
        if not failures:
            print("ok an edited stage file is checked again; the others are remembered")

        # check writes the memo: the starter's stage 1 half-done by hand, checked, then listed.
        path = os.path.join(tree, stage1["dir"], stage1["file"])
        shutil.copy(os.path.join(source, "solutions", stage1["dir"], stage1["file"]), path)
        text = open(path).read()
        broken = text.replace("MatVec(w + OFF_WK, KV, D", "MatVec(w + OFF_WQ, KV, D", 1)
        if broken == text:
            failures.append("the stage-1 solution no longer has the text this test edits")
        open(path, "w").write(broken)
        run(workbook, "check", "1", "--stages-dir", tree)
        code, out, _ = run(workbook, "list", "--stages-dir", tree)
        line = stage_lines(out).get(1, "")
        if "next: k" not in line:
            failures.append(f"after check 1 of a file whose k is wrong, list says '{line}'")
        else:
            print(f"ok after check 1: {line.strip()}")
    finally:
        shutil.rmtree(tree, ignore_errors=True)
    if failures:
        print("\n".join("FAIL: " + f for f in failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
