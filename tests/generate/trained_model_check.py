#!/usr/bin/env python3
"""The workbook's own model writes what the reference writes, from every file it ships in.

data/models/kjv-llama-2m/ holds the model as a Hugging Face folder and as GGUF files in F16,
Q8_0 and Q4_0; goldens.json holds, for a few prompts and each file, the float64 reference's
greedy continuation (`workbook reference --prompt ... --greedy 32`, the provided kernels'
input quantization and generate's f16 cache emulated) with each step's margin between the two
largest logits. This test runs the solution's decoder through the generate program on each
file at temperature 0 and checks:
  - the tokens equal the golden ones up to the first step whose margin is below the file's
    tie margin (a near tie, where float32 against float64 may pick either; from there on the
    two texts may part, and the test says where it stopped comparing), and at least
    MIN_COMPARED tokens are compared in all. The tie margin is 1e-3 for the float files; on
    Q8_0 and Q4_0 files the provided kernels quantize each product's input rows to int8, and
    a last-bit difference upstream can move one code by a step, which moves a logit by a few
    hundredths (seen: a flip at a margin of 0.028), so there it is 0.05;
  - with the default sampler and --seed 1 the text is the same on a second run, and not
    empty; another seed gives other text;
  - the untouched starter (`generate --mine` on a copy of stages/) exits 1 saying stage 5 is
    not implemented;
  - `workbook convert` writes the committed GGUF files byte for byte from the HF folder;
  - bench mode prints its figures for 1 and 2 threads, and decode steps allocate nothing.
Usage: trained_model_check.py SOURCE_ROOT GENERATE_PROGRAM WORKBOOK_EXE
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

FLOAT_TIE_MARGIN = 1e-3
QUANTIZED_TIE_MARGIN = 0.05
MIN_COMPARED = 200


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=600, **kw)


def main():
    root, program, workbook = sys.argv[1], sys.argv[2], sys.argv[3]
    folder = os.path.join(root, "data", "models", "kjv-llama-2m")
    goldens = json.load(open(os.path.join(folder, "goldens.json")))
    failures = []
    compared = 0

    for case in goldens["cases"]:
        for file_name, golden in case["files"].items():
            path = os.path.join(folder, file_name)
            out = run([program, "--model", path, "--prompt", case["prompt"], "-n", str(len(golden["tokens"])),
                       "--temperature", "0", "--format", "json", "--cache", goldens["cache"], "--threads", "2"])
            if out.returncode != 0:
                failures.append(f"{file_name} {case['prompt']!r}: exit {out.returncode}: {out.stderr.strip()}")
                continue
            made = json.loads(out.stdout)
            if made["prompt_tokens"] != golden["prompt_tokens"]:
                failures.append(f"{file_name} {case['prompt']!r}: prompt tokens {made['prompt_tokens']} "
                                f"!= golden {golden['prompt_tokens']}")
                continue
            tie = QUANTIZED_TIE_MARGIN if "q8_0" in file_name or "q4_0" in file_name else FLOAT_TIE_MARGIN
            for step, (want, got) in enumerate(zip(golden["tokens"], made["tokens"])):
                if golden["margins"][step] < tie:
                    print(f"{file_name} {case['prompt']!r}: step {step} is a near tie "
                          f"(margin {golden['margins'][step]:.2g}); compared {step} tokens")
                    break
                if want != got:
                    failures.append(f"{file_name} {case['prompt']!r}: step {step}: the decoder chose {got}, "
                                    f"the reference {want} (margin {golden['margins'][step]:.3g})")
                    break
                compared += 1
            else:
                if len(made["tokens"]) < len(golden["tokens"]) and made["stop"] != "end of text":
                    failures.append(f"{file_name} {case['prompt']!r}: stopped after {len(made['tokens'])} tokens")
            print(f"{file_name} {case['prompt']!r}: {made['text']!r}")

    if compared < MIN_COMPARED:
        failures.append(f"only {compared} tokens compared in all (at least {MIN_COMPARED} expected)")

    # Sampling: the same seed, the same text; another seed, other text.
    q8 = os.path.join(folder, "model-q8_0.gguf")
    texts = []
    for seed in ("1", "1", "2"):
        out = run([program, "--model", q8, "--prompt", "And God said", "-n", "32", "--seed", seed, "--format", "json"])
        if out.returncode != 0:
            failures.append(f"--seed {seed}: exit {out.returncode}: {out.stderr.strip()}")
            texts.append(None)
            continue
        texts.append(json.loads(out.stdout)["text"])
    if texts[0] is not None and (texts[0] != texts[1] or not texts[0].strip()):
        failures.append(f"--seed 1 twice gave {texts[0]!r} and {texts[1]!r}")
    if texts[0] is not None and texts[0] == texts[2]:
        failures.append(f"--seed 1 and --seed 2 gave the same text {texts[0]!r}")

    # Bench mode, as `workbook bench 5` runs it: every figure there, decode allocating nothing,
    # and the huge-page share (where the program can read it) no more than the process holds.
    q4 = os.path.join(folder, "model-q4_0.gguf")
    out = run([program, "--model", q4, "--bench", "--bench-threads", "1,2", "--bench-repeats", "2", "--bench-prefill", "4",
               "--bench-decode", "8", "--cache", "f16", "--decoder-name", "the solution"])
    if out.returncode != 0:
        failures.append(f"--bench: exit {out.returncode}: {out.stderr.strip()}")
    else:
        bench = json.loads(out.stdout)
        if bench["file_bytes"] != os.path.getsize(q4) or not 0 < bench["weight_bytes_per_token"] <= bench["file_bytes"]:
            failures.append(f"--bench: file {bench['file_bytes']} and weight bytes {bench['weight_bytes_per_token']} "
                            f"for a {os.path.getsize(q4)}-byte file")
        if [r["threads"] for r in bench["runs"]] != [1, 2]:
            failures.append(f"--bench: runs for threads {[r['threads'] for r in bench['runs']]}, not [1, 2]")
        for r in bench["runs"]:
            rates = r["prefill_tokens_per_second"] + r["decode_tokens_per_second"]
            if len(rates) != 4 or not all(x > 0 for x in rates):
                failures.append(f"--bench, {r['threads']} threads: rates {rates}")
            if r.get("decode_allocations", 0) != 0:
                failures.append(f"--bench, {r['threads']} threads: decode steps allocated {r['decode_allocations']} times")
            if r.get("huge_page_bytes", 0) > bench["peak_rss_bytes"]:
                failures.append(f"--bench, {r['threads']} threads: {r['huge_page_bytes']} bytes on huge pages, more "
                                f"than the peak resident {bench['peak_rss_bytes']}")

    # The untouched starter, on a copy of the tree's starters.
    with tempfile.TemporaryDirectory() as temp:
        stages = os.path.join(temp, "stages")
        for stage in ("03-fused", "04-quant", "05-decoder"):
            shutil.copytree(os.path.join(root, "stages", stage), os.path.join(stages, stage))
        out = run([workbook, "generate", "--mine", "--stages", stages, "--model", q8, "--prompt", "In the beginning",
                   "-n", "4"])
        if out.returncode != 1 or "not implemented" not in out.stderr:
            failures.append(f"generate --mine on the starter: exit {out.returncode}, said {out.stderr.strip()!r}")

        # The committed GGUF files are what `workbook convert` writes from the HF folder.
        for kind in ("f16", "q8_0", "q4_0"):
            written = os.path.join(temp, f"model-{kind}.gguf")
            out = run([workbook, "convert", os.path.join(folder, "hf"), "--type", kind, "--name", goldens["name"],
                       "-o", written])
            if out.returncode != 0:
                failures.append(f"convert --type {kind}: exit {out.returncode}: {out.stderr.strip()}")
                continue
            with open(written, "rb") as a, open(os.path.join(folder, f"model-{kind}.gguf"), "rb") as b:
                if a.read() != b.read():
                    failures.append(f"convert --type {kind} wrote other bytes than the committed model-{kind}.gguf")

    for f in failures:
        print("FAIL:", f)
    print(f"{compared} tokens compared with the reference's")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
