#!/usr/bin/env python3
"""bench_figures.py catches what it is there to catch: a table or a quoted figure edited by
hand, a bench JSON re-run without the docs, and a figure the JSON cannot give. Each is planted
in a copy of the docs and the committed JSON, never in the tree itself."""
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(sys.argv[1])
SCRIPT = Path(__file__).with_name("bench_figures.py")
FILES = ["docs/stages/03-fused.md", "docs/stages/04-quant.md", "docs/generate.md", "docs/kjv-model.md",
         "docs/figures/stage03-bench.json", "docs/figures/stage04-bench.json",
         "docs/figures/stage05-bench.json", "docs/figures/stage05-kjv-bench.json",
         "docs/figures/stage05-contention-bench.json"]
failures = []
checks = 0


def run(root, *extra):
    return subprocess.run([sys.executable, str(SCRIPT), str(root), *extra], capture_output=True, text=True)


def planted(name, change, expect):
    """Copy the files, apply change(root), and require a failure whose report contains expect."""
    global checks
    checks += 1
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for f in FILES:
            (root / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / f, root / f)
        change(root)
        got = run(root)
        if got.returncode != 1 or expect not in got.stdout:
            failures.append(f"{name}: expected exit 1 naming '{expect}', got {got.returncode}:\n{got.stdout}{got.stderr}")
        # --write repairs a table or figure that differs from the JSON, and then the check passes
        # (a figure the JSON lacks, or a marker Markdown would misread, only a person can fix).
        if "differs" in expect or "quoted as" in expect:
            run(root, "--write")
            again = run(root)
            if again.returncode != 0:
                failures.append(f"{name}: --write did not repair it:\n{again.stdout}")


def edit(path, pattern, replacement):
    def change(root):
        text = (root / path).read_text()
        new, n = re.subn(pattern, replacement, text, count=1)
        assert n == 1, f"{path}: no match for {pattern}"
        (root / path).write_text(new)
    return change


def edit_json(path, mutate):
    def change(root):
        data = json.loads((root / path).read_text())
        mutate(data)
        (root / path).write_text(json.dumps(data))
    return change


def slower_qkv(data):
    for r in data["rows"]:
        if r["kernel"] == "matmul qkv" and r["T"] == 512 and r["threads"] == 1:
            r["gflops"] *= 0.5


# The committed docs agree with the committed JSON.
checks += 1
real = run(ROOT)
if real.returncode != 0:
    failures.append(f"the committed docs and bench JSON disagree:\n{real.stdout}{real.stderr}")

planted("a table cell edited by hand", edit("docs/stages/04-quant.md", r"(\| Q8_0 \| )[0-9.]+", r"\g<1>999.9"),
        "Table 4.2 differs from the bench JSON")
planted("a quoted figure edited by hand",
        edit("docs/generate.md", r"(<!--fig:s5\.pct\.max-->)[0-9]+", r"\g<1>99"), "s5.pct.max is quoted as 99")
planted("the JSON re-run without the docs", edit_json("docs/figures/stage03-bench.json", slower_qkv),
        "Table 3.1 differs from the bench JSON")
planted("a figure the JSON cannot give", edit("docs/stages/03-fused.md", r"<!--fig:s3\.qkv\.t1\.gflops-->",
        "<!--fig:s3.qkv.t1.no_such_figure-->"), "figure s3.qkv.t1.no_such_figure is not one the bench JSON gives")
planted("a figure marker at the start of a line",
        edit("docs/generate.md", r" (<!--fig:s5\.pct\.max-->)", "\n\\1"), "a figure marker starts the line")

for f in failures:
    print(f"FAIL {f}\n")
print(f"bench_figures_test: {checks - len(failures)} of {checks} checks hold")
sys.exit(1 if failures else 0)
