#!/usr/bin/env python3
"""What a student's first `./workbook check` builds, read from the build's own graph.

The launcher builds the alias stage-1-ready for a first `check 1` (meson.build), and
runner-ready for an autograder (`./workbook build`). This check fails when either alias
pulls in what a check does not need (the model-file readers, the eight-family reference,
the fixtures, the tests) or when a heavy header is compiled in more than one translation
unit of it again: the two causes of a slow first build, measured in the issue that set the
goal of a first check in under a minute on two cores.

Usage: first_build_check.py NINJA BUILD_DIR
"""
import re
import subprocess
import sys

# Source folders whose code a check never runs.
NOT_NEEDED = ("model/", "reference/decoder/", "reference/fixtures/", "tests/")
# Except the GGUF half of the model-file readers (model/files/meson.build: wbggufreader):
# stage 4's checks read their quantized weights from GGUF files, and the build quantizes them.
NEEDED_MODEL_SOURCES = tuple("model/files/" + name + ".cc" for name in (
    "mapped_file", "printable", "tensor_types", "half_float", "dequantize", "quantize", "gguf",
    "gguf_getters")) + ("model/config/qk_permutation.cc",)
# Libraries that are only the model tools' (model/meson.build, reference/decoder/meson.build).
NOT_NEEDED_TARGETS = ("libwbmodel", "libwbmodelfile", "libwbdecoder", "workbook-models")
# Header-only libraries that cost seconds per translation unit that includes them.
HEAVY_HEADERS = ("nlohmann/json.hpp", "CLI/CLI.hpp")
# Another stage's solution, harness, bench child, prelude or data (stage 1 is the first
# stage, numbered 01 in file and target names).
OTHER_STAGE_CODE = re.compile(r"(solutions/0[2-9]-|stage0[2-9]|harness_stage0[2-9])")
# The runner's two unity translation units and its front end's (meson.build: fast_first_build).
MOST_UNITS_PER_HEADER = 3


def ninja(ninja_exe, build, *args):
    out = subprocess.run([ninja_exe, "-C", build, *args], check=True, capture_output=True, text=True)
    return out.stdout.splitlines()


def main():
    ninja_exe, build = sys.argv[1], sys.argv[2]
    problems = []
    for alias in ("stage-1-ready", "runner-ready"):
        inputs = [line.strip() for line in ninja(ninja_exe, build, "-t", "inputs", alias)]
        for path in inputs:
            source = path[3:] if path.startswith("../") else path
            if source.startswith(NEEDED_MODEL_SOURCES) or "libwbggufreader" in source:
                continue
            if source.startswith(NOT_NEEDED) or any(name in source for name in NOT_NEEDED_TARGETS):
                problems.append(f"{alias} needs {path}, which no check uses")
            # A stage's first command builds that stage's own code and no other stage's.
            if alias == "stage-1-ready" and OTHER_STAGE_CODE.search(source):
                problems.append(f"{alias} needs {path}, which only another stage uses")

    objects = [p for p in inputs if p.endswith(".o")]
    if not objects:
        problems.append("runner-ready has no object files: is this the workbook's build folder?")
    users = {header: [] for header in HEAVY_HEADERS}
    for obj in objects:
        for line in ninja(ninja_exe, build, "-t", "deps", obj):
            for header in HEAVY_HEADERS:
                if line.strip().endswith(header):
                    users[header].append(obj)
    for header, objs in users.items():
        if len(objs) > MOST_UNITS_PER_HEADER:
            problems.append(f"{header} is compiled in {len(objs)} translation units of runner-ready "
                            f"(at most {MOST_UNITS_PER_HEADER}): " + ", ".join(objs))

    for problem in problems:
        print("FAIL:", problem)
    print(f"runner-ready: {len(objects)} object files; "
          + "; ".join(f"{h} in {len(o)}" for h, o in users.items()))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
