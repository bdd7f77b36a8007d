#!/usr/bin/env python3
"""The speed figures in the docs come from the committed bench JSON, and this keeps them so.

docs/figures/stage03-bench.json, stage04-bench.json, stage05-bench.json,
stage05-kjv-bench.json and stage05-contention-bench.json are the output of `./workbook bench N
--solutions --format json` (with --model or --contention for the last two; the commands are in
each table's caption).
From them this script renders

  - each table between `<!-- bench-table: NAME -->` and `<!-- /bench-table -->` in the docs,
    caption included (command, machine, date);
  - each figure quoted in the prose as `<!--fig:KEY-->NUMBER`: the number after the marker
    is the value KEY names, formatted as the tables format it.

  bench_figures.py ROOT           exit 1 and name every table or figure that differs
  bench_figures.py ROOT --write   rewrite them in place from the JSON

A table or figure the docs name and the JSON cannot give is an error too, so a renamed key
fails here rather than leaving an old number standing.
"""
import argparse
import json
import re
import statistics
import sys
from pathlib import Path

DOCS = ["docs/stages/03-fused.md", "docs/stages/04-quant.md", "docs/generate.md", "docs/kjv-model.md"]
TABLE = re.compile(r"(<!-- bench-table: ([\w.-]+) -->\n)(.*?)(<!-- /bench-table -->)", re.S)
FIGURE = re.compile(r"<!--fig:([\w.+-]+)-->([0-9][0-9,]*(?:\.[0-9]+)?)")


S4_BEFORE = "Medians of each measurement's runs."


def medians(bench, before):
    """How the caption says the figures were taken: a report from a bench that timed the
    solution from outside its child says so (its "timed_from")."""
    if bench.get("timed_from") == "outside":
        return ("Each figure the median of three batches of calls, timed by the runner's clock from outside "
                "the child that ran them.")
    return before


def stage5_medians(bench):
    """Stage 5's caption of its tokens/s: a report whose every model was timed from outside the
    generate program (each model's "timed_from") says so."""
    outside = all(m.get("timed_from") == "outside" for m in bench["models"])
    return ("Tokens/s are medians of 3 runs" + (", each prefill and decode timed by the runner's clock from outside "
                                                "the program" if outside else "")
            + ", with the slowest and the fastest in brackets.")


def load(root, stage, variant=""):
    path = root / "docs" / "figures" / f"stage{stage:02d}{variant}-bench.json"
    try:
        bench = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        sys.exit(f"bench_figures: {path}: {e}")
    # A committed report names the workbook's files by their place in the tree, never a folder
    # of the machine it ran on.
    for m in bench.get("models", []):
        if Path(m["model"]).is_absolute():
            sys.exit(f"bench_figures: {path}: model {m['model']} is an absolute path; the bench names models "
                     "as given or by their place in the workbook")
    return bench


def machine_words(bench):
    m = bench.get("machine")
    if not m:
        raise KeyError("machine (the bench JSON predates its machine block; run the bench again)")
    ext = ", ".join(x.upper().replace("_", " ").replace("AVX512", "AVX-512") for x in m["extensions"])
    return f"{m['online_cpus']}-CPU {m['cpu']} ({ext}), {m['compiler']}"


def caption(bench, command):
    m = bench["machine"]
    return (f"Command: `{command}`; machine: {machine_words(bench)}; "
            f"date: {m['utc'][:10]}, {m['utc'][11:16]} UTC.")


def one(rows, **want):
    hits = [r for r in rows if all(r.get(k) == v for k, v in want.items())]
    if len(hits) != 1:
        raise KeyError(f"{len(hits)} rows with {want}")
    return hits[0]


def percent_beside(value, goal):
    """A percentage for a goals table: whole, unless rounding would make it read as the other side
    of the goal (79.6 % shown as "80 %" beside "short"); then with as many decimals as it takes."""
    for digits in range(0, 5):
        text = f"{value:.{digits}f}"
        if (float(text) >= goal) == (value >= goal):
            break
    return text + " %"


def ratio_beside(value, goal):
    """A ratio for a goals table: two decimals, and as many more as it takes not to read as the
    other side of the goal (1.6997 as "1.6997×", not "1.70×" beside "short"), as the bench's
    own goals table prints it (runner/stages/bench_support.cc, FigureBesideGoal)."""
    for digits in range(2, 7):
        text = f"{value:.{digits}f}"
        if (float(text) >= goal) == (value >= goal):
            break
    return text + "×"


def goals_table(title, rows):
    """A goal per row, the figure the run gave, and whether it meets the goal."""
    out = [title, "", "| goal | this run | |", "|---|---|---|"]
    for goal, shown, met in rows:
        out.append(f"| {goal} | {shown} | {'met' if met else 'short'} |")
    return "\n".join(out)


def json_goals(title, b):
    """The goals table from a bench run's own "goals" (the bench states its stage's goals)."""
    rows = []
    for g in b["goals"]:
        shown = percent_beside(g["value"], g["target"]) if g["unit"] == "%" else ratio_beside(g["value"], g["target"])
        target = f"{g['target']:.0f} %" if g["unit"] == "%" else f"{g['target']:.1f}×"
        rows.append((f"{g['goal']}, at least {target}", shown, g["met"]))
    return goals_table(title, rows)


def spread(values):
    return statistics.median(values), min(values), max(values)


# --- stage 3 ---------------------------------------------------------------------------------
SHAPES = [("qkv", "768 × 512"), ("wo", "512 × 512"), ("gate/up", "1408 × 512"), ("down", "512 × 1408")]
S3_COMMAND = ("./workbook bench 3 --solutions --format json --plot docs/figures/stage03-roofline.svg"
              " > docs/figures/stage03-bench.json")


def stage3(b, fig):
    rows = b["rows"]
    peak, bw = b["probe"]["fma_peak_gflops"], b["probe"]["read_bandwidth_gbs"]
    fig["s3.peak.t1"], fig["s3.peak.t2"] = f"{peak[0]:.1f}", f"{peak[1]:.1f}"
    fig["s3.bw.t1"], fig["s3.bw.t2"] = f"{bw[0]:.1f}", f"{bw[1]:.1f}"
    fig["s3.cache_mib"] = f"{b['cache']['bytes'] / 2**20:.0f}"
    fig["s3.probe_mib"] = f"{b['probe']['read_bytes'] / 2**20:.0f}"
    out = [f"**Table 3.1 — `matmul` and `fused_block`, T = 512, the solution.** {caption(b, S3_COMMAND)} "
           f"{medians(b, 'Medians.')} The probe: an FMA peak of {peak[0]:.1f} GFLOP/s on one thread and {peak[1]:.1f} on two, "
           f"and a read bandwidth of {bw[0]:.1f} and {bw[1]:.1f} GB/s. \"% of peak\" is of the FMA peak on one "
           "thread; \"× stage 1\" is the speed over stage 1's loop order; \"× OpenBLAS\" is OpenBLAS's time "
           "over the solution's (above 1, the solution is faster).", "",
           "| T = 512 | 1 thread, GFLOP/s | % of peak | × stage 1 | × OpenBLAS | 2 threads, GFLOP/s (÷ 1 thread) |",
           "|---|---|---|---|---|---|"]
    pct, blas = [], []
    for key, label, kernel in [(s, f"`matmul` {s}, {dims}", f"matmul {s}") for s, dims in SHAPES] + \
            [("block", "`fused_block`", "fused_block")]:
        r1, r2 = one(rows, T=512, threads=1, kernel=kernel), one(rows, T=512, threads=2, kernel=kernel)
        k = f"s3.{key}"
        fig[f"{k}.t1.gflops"], fig[f"{k}.t2.gflops"] = f"{r1['gflops']:.1f}", f"{r2['gflops']:.1f}"
        fig[f"{k}.t1.pct"] = f"{r1['percent_of_peak']:.0f}"
        fig[f"{k}.t1.x_stage1"] = f"{r1['ratio_to_stage1']:.1f}"
        fig[f"{k}.t1.x_openblas"] = f"{r1['ratio_to_openblas']:.2f}"
        fig[f"{k}.t1.openblas_gflops"] = f"{r1['flops'] / r1['openblas_seconds'] / 1e9:.1f}"
        fig[f"{k}.t2_over_t1"] = f"{r2['gflops'] / r1['gflops']:.1f}"
        if key != "block":
            pct.append(r1["percent_of_peak"])
            blas.append(r1["ratio_to_openblas"])
        first, second = f"{r1['gflops']:.1f}", f"{r2['gflops']:.1f}"
        if key == "block":
            fig["s3.block.t1.ms"] = f"{r1['time']['median_seconds'] * 1e3:.1f}"
            fig["s3.block.t2.ms"] = f"{r2['time']['median_seconds'] * 1e3:.1f}"
            first += f" ({fig['s3.block.t1.ms']} ms)"
            second += f" ({fig['s3.block.t2.ms']} ms)"
        out.append(f"| {label} | {first} | {fig[k + '.t1.pct']} % | {fig[k + '.t1.x_stage1']}× | "
                   f"{fig[k + '.t1.x_openblas']}× | {second}, {fig[k + '.t2_over_t1']}× |")
    fig["s3.matmul.pct.min"], fig["s3.matmul.pct.max"] = f"{min(pct):.0f}", f"{max(pct):.0f}"
    fig["s3.matmul.x_openblas.min"], fig["s3.matmul.x_openblas.max"] = f"{min(blas):.2f}", f"{max(blas):.2f}"
    t2 = [one(rows, T=512, threads=2, kernel=f"matmul {s}")["gflops"] / one(rows, T=512, threads=1,
          kernel=f"matmul {s}")["gflops"] for s, _ in SHAPES]
    fig["s3.matmul.t2_over_t1.min"], fig["s3.matmul.t2_over_t1.max"] = f"{min(t2):.1f}", f"{max(t2):.1f}"
    tables = {"3.1": "\n".join(out)}
    qkv, block = one(rows, T=512, threads=1, kernel="matmul qkv"), one(rows, T=512, threads=1, kernel="fused_block")
    block2 = one(rows, T=512, threads=2, kernel="fused_block")
    if "goals" in b:
        tables["3.goals"] = json_goals("**Table 3.3 — the solution against its goals**, from the run of Table 3.1.", b)
    else:
      tables["3.goals"] = goals_table(
        "**Table 3.3 — the solution against its goals**, from Table 3.1.",
        [("`matmul`, qkv shape, one thread: 70 % of the FMA peak", f"{fig['s3.qkv.t1.pct']} %",
          qkv["percent_of_peak"] >= 70),
         ("`matmul`, qkv shape, one thread: 0.8× `cblas_sgemm` or faster", f"{fig['s3.qkv.t1.x_openblas']}×",
          qkv["ratio_to_openblas"] >= 0.8),
         ("`fused_block`: as fast as the OpenBLAS-built block (1.0×)", f"{fig['s3.block.t1.x_openblas']}×",
          block["ratio_to_openblas"] >= 1.0),
         ("`fused_block`: 30× the stage-1 solution", f"{fig['s3.block.t1.x_stage1']}×", block["ratio_to_stage1"] >= 30),
         ("`fused_block`: two threads 1.7× one thread", f"{fig['s3.block.t2_over_t1']}×",
          block2["gflops"] / block["gflops"] >= 1.7)])

    count = ["no", "one", "two", "three", "four", "five", "six"][len(b["versions"])]
    out = [f"**Table 3.2 — the solution's {count} `matmul` versions, qkv shape (768 × 512), T = 512, one "
           "thread.** Command, machine and date: the run of Table 3.1 (`--solutions` times the versions "
           "too, each validated first). Each version is a complete kernel with the contract's signature; "
           "the last is the solution's `matmul`.", "",
           "| version | what it adds | GFLOP/s |", "|---|---|---|"]
    for v in b["versions"]:
        name, _, adds = v["name"].partition(": ")
        at512 = [x for x in v["qkv"] if x["T"] == 512]
        if not v["valid"] or len(at512) != 1:
            raise KeyError(f"version {name}: not valid or not timed at T = 512")
        fig[f"s3.version.{name}"] = f"{at512[0]['gflops']:.1f}"
        out.append(f"| {name} | {adds.replace(' x ', ' × ')} | {fig['s3.version.' + name]} |")
    if "s3.version.tiled" in fig and "s3.version.naive" in fig:
        fig["s3.tiled_over_naive"] = f"{float(fig['s3.version.tiled']) / float(fig['s3.version.naive']):.1f}"
        fig["s3.vectorised_over_tiled"] = \
            f"{float(fig['s3.version.vectorised']) / float(fig['s3.version.tiled']):.0f}"
    if "s3.version.packed" in fig:
        fig["s3.packed_over_threaded"] = \
            f"{float(fig['s3.version.packed']) / float(fig['s3.version.threaded']):.2f}"
    tables["3.2"] = "\n".join(out)
    return tables


# Bytes a weight takes: ggml's block_q8_0 (a half scale and 32 int8) and block_q4_0 (a half
# scale and 32 nibbles), per 32 weights.
BYTES_PER_WEIGHT = {"q4_0": 18 / 32, "q8_0": 34 / 32}


# --- stage 4 ---------------------------------------------------------------------------------
S4_COMMAND = ("./workbook bench 4 --solutions --format json --plot docs/figures/stage04-bandwidth.svg"
              " > docs/figures/stage04-bench.json")


def stage4(b, fig):
    probe = {p["threads"]: p for p in b["probe"]}
    kernels = b["decode"]["kernels"]
    for t in (1, 2):
        p = probe[t]
        fig[f"s4.probe.t{t}.before"] = f"{p['read_bandwidth_gbs_before']:.1f}"
        fig[f"s4.probe.t{t}.after"] = f"{p['read_bandwidth_gbs_after']:.1f}"
        fig[f"s4.probe.t{t}.mean"] = f"{p['read_bandwidth_gbs']:.1f}"
    mib = probe[1]["buffer_bytes"] / 2**20
    fig["s4.cache_mib"], fig["s4.probe_mib"] = f"{b['cache']['bytes'] / 2**20:.0f}", f"{mib:.0f}"
    out = [f"**Table 4.1 — `matmul_q` at T = 1, 14336 × 4096, the solution.** {caption(b, S4_COMMAND)} "
           f"{medians(b, S4_BEFORE)} The probe read {mib:.0f} MiB at "
           f"{fig['s4.probe.t1.before']} GB/s on one thread before the kernels and {fig['s4.probe.t1.after']} "
           f"after, and at {fig['s4.probe.t2.before']} and {fig['s4.probe.t2.after']} GB/s on two; "
           "\"% of probe\" is of the mean of the two readings at the same thread count. \"× stage 3 float\" "
           "is the speed over stage 3's float `matmul` on the same logical matrix. Each kernel reads the "
           "next of its copies of the matrix on each run.", "",
           "| T = 1, 14336 × 4096 | threads | GB/s | % of probe | × stage 3 float |",
           "|---|---|---|---|---|"]
    for type_, label in [("q8_0", "`matmul_q`, Q8_0"), ("q4_0", "`matmul_q`, Q4_0"),
                         ("f32", "stage 3's float `matmul`")]:
        for t in (1, 2):
            k = one(kernels, type=type_, threads=t)
            key = f"s4.{type_}.t{t}"
            fig[f"{key}.gbs"] = f"{k['gbs']:.1f}"
            fig[f"{key}.pct"] = f"{k['percent_of_probe']:.0f}"
            fig[f"{key}.x_f32"] = f"{k['speed_over_f32']:.2f}"
            copies = f"{k['copies']} {'copy' if k['copies'] == 1 else 'copies'}"
            out.append(f"| {label} ({copies}) | {t} | {fig[f'{key}.gbs']} | {fig[f'{key}.pct']} % | "
                       f"{fig[f'{key}.x_f32']}× |")
    # One FFN matrix of Llama 3 8B, 14336 x 4096 (meta-llama/Meta-Llama-3-8B's config.json),
    # read once per token at the one-thread probe's bandwidth: the least time it can take.
    bandwidth = probe[1]["read_bandwidth_gbs"] * 1e9
    for type_, per_weight in [("f32", 4.0)] + list(BYTES_PER_WEIGHT.items()):
        fig[f"s4.llama_ffn.{type_}.ms"] = f"{14336 * 4096 * per_weight / bandwidth * 1e3:.2f}"
    fig["s4.q4_0.weights_per_second"] = f"{bandwidth / BYTES_PER_WEIGHT['q4_0'] / 1e9:.0f}"
    for t, ratio in zip((1, 2), b["decode"]["q4_0_speed_over_q8_0"]):
        fig[f"s4.q4_over_q8.t{t}"] = f"{ratio:.2f}"
    quant = [one(kernels, type=ty, threads=t)["percent_of_probe"] for ty in ("q8_0", "q4_0") for t in (1, 2)]
    fig["s4.quant.pct.min"], fig["s4.quant.pct.max"] = f"{min(quant):.0f}", f"{max(quant):.0f}"
    tables = {"4.1": "\n".join(out)}
    rows = []
    for t in (1, 2):
        ratio = b["decode"]["q4_0_speed_over_q8_0"][t - 1]
        # The goal the bench states (runner/stages/04-quant: Q4_0 over Q8_0 at least 1.7).
        rows.append((f"Q4_0 at 1.7× Q8_0's speed, {t} thread{'s' if t == 2 else ''}",
                     ratio_beside(ratio, 1.7), ratio >= 1.7))
    for type_ in ("q8_0", "q4_0"):
        for t in (1, 2):
            pct = one(kernels, type=type_, threads=t)["percent_of_probe"]
            rows.append((f"{type_.upper()} at 80 % of the probe, {t} thread{'s' if t == 2 else ''}",
                         percent_beside(pct, 80), pct >= 80))
    tables["4.goals"] = goals_table("**Table 4.4 — the solution against its goals**, from Table 4.1.", rows)

    out = ["**Table 4.5 — the solution's kernel versions, `matmul_q` at T = 1, 14336 × 4096.** Command, machine "
           "and date: the run of Table 4.1 (`--solutions` checks each version this CPU runs on the visible suite, "
           "then times it; Table 4.1's rows ran the fastest). \"% of probe\" is of Table 4.1's probe.", "",
           "| version | type | 1 thread, GB/s | % of probe | 2 threads, GB/s | % of probe |",
           "|---|---|---|---|---|---|"]
    for v in b.get("versions", []):
        if not v["ran"]:
            out.append(f"| {v['name']} | {v['note']} | | | | |")
            continue
        for type_ in ("q8_0", "q4_0"):
            cells = []
            for t in (1, 2):
                r = one(v["decode"], type=type_, threads=t)
                key = f"s4.version.{v['name']}.{type_}.t{t}"
                fig[f"{key}.gbs"], fig[f"{key}.pct"] = f"{r['gbs']:.1f}", f"{r['percent_of_probe']:.0f}"
                cells += [fig[f"{key}.gbs"], f"{fig[f'{key}.pct']} %"]
            out.append(f"| {v['name']} | {type_.upper()} | " + " | ".join(cells) + " |")
    if b.get("versions"):
        tables["4.versions"] = "\n".join(out)

    out = ["**Table 4.2 — `matmul_q` at T = 128, 4096 × 4096, the solution.** Command, machine and date: "
           "the run of Table 4.1. GOP/s counts 2 integer operations per multiply-add.", "",
           "| `matmul_q`, T = 128, 4096 × 4096 | 1 thread, GOP/s | 2 threads, GOP/s |", "|---|---|---|"]
    for type_, label in [("q8_0", "Q8_0"), ("q4_0", "Q4_0")]:
        for t in (1, 2):
            fig[f"s4.prefill.{type_}.t{t}"] = f"{one(b['prefill']['kernels'], type=type_, threads=t)['gops']:.1f}"
        out.append(f"| {label} | {fig[f's4.prefill.{type_}.t1']} | {fig[f's4.prefill.{type_}.t2']} |")
    tables["4.2"] = "\n".join(out)

    out = ["**Table 4.3 — `quant_block`, tokens per second, the solution.** Command, machine and date: the "
           "run of Table 4.1. The block's weights fit in the cache, so these are not figures of the memory's "
           "speed.", "",
           "| `quant_block`, tokens/s | T = 1, 1 thread | T = 1, 2 threads | T = 128, 1 thread | "
           "T = 128, 2 threads |", "|---|---|---|---|---|"]
    for s in ("q8_0", "q4_0", "mixed"):
        cells = [f"{one(b['block'], set=s, T=T, threads=t)['tokens_per_second']:.0f}"
                 for T in (1, 128) for t in (1, 2)]
        out.append(f"| `{s}` | " + " | ".join(cells) + " |")
    tables["4.3"] = "\n".join(out)
    return tables


# --- stage 5 ---------------------------------------------------------------------------------
S5_COMMAND = "./workbook bench 5 --solutions --format json > docs/figures/stage05-bench.json"
# TinyLlama 1.1B's output head, which a prefill runs for its last token only: its vocabulary
# (32000) times its width (2048), from TinyLlama/TinyLlama-1.1B-Chat-v1.0's config.json.
HEAD_WEIGHTS = 32000 * 2048


def stage5(b, fig, s4):
    weights = {next(t for t in BYTES_PER_WEIGHT if t in Path(m["model"]).stem): m["weight_bytes_per_token"]
               for m in b["models"]}
    out = [f"**Table G.1 — `bench 5`, the solution, TinyLlama-shaped models.** {caption(b, S5_COMMAND)} "
           f"{stage5_medians(b)} A decoded token reads "
           + " and ".join(f"{w / 1e6:.1f} MB of weights in {t.upper()}" for t, w in weights.items())
           + "; \"GB/s\" is decode tokens/s times that, and \"% of probe\" is that over the mean of the "
           "probe's readings just before and just after the model, at the same thread count.", "",
           "| model, threads | prefill 128, tokens/s | decode 64, tokens/s | GB/s | % of probe | "
           "probe before, after (GB/s) |", "|---|---|---|---|---|---|"]
    shares, notes = [], []
    fig["s5.cache_mib"] = f"{b['last_level_cache']['bytes'] / 2**20:.0f}"
    fig["s5.probe_mib"] = f"{b['probe']['bytes'] / 2**20:.0f}"
    for m in b["models"]:
        type_ = next(t for t in BYTES_PER_WEIGHT if t in Path(m["model"]).stem)
        weight_bytes = m["weight_bytes_per_token"]
        # 2 integer operations per multiply-add, as stage 4's bench counts them.
        ops_per_token = 2 * (weight_bytes / BYTES_PER_WEIGHT[type_] - HEAD_WEIGHTS)
        fig[f"s5.{type_}.weights_mb"] = f"{weight_bytes / 1e6:.1f}"
        fig[f"s5.{type_}.gop_per_token"] = f"{ops_per_token / 1e9:.3f}"
        for i, r in enumerate(m["runs"]):
            t = r["threads"]
            pre, dec = spread(r["prefill_tokens_per_second"]), spread(r["decode_tokens_per_second"])
            key = f"s5.{type_}.t{t}"
            fig[f"{key}.prefill"] = f"{pre[0]:.1f}"
            fig[f"{key}.decode"] = f"{dec[0]:.1f}"
            fig[f"{key}.gbs"] = f"{r['decode_gb_per_second']:.2f}"
            fig[f"{key}.pct"] = f"{100 * r['decode_share_of_probe']:.0f}"
            gops = pre[0] * ops_per_token / 1e9
            fig[f"{key}.prefill_gops"] = f"{gops:.0f}"
            fig[f"{key}.prefill_over_matmul_q"] = f"{gops / float(s4[f's4.prefill.{type_}.t{t}']):.2f}"
            shares.append(100 * r["decode_share_of_probe"])
            before, after = m["probe_gb_per_second"]["before"][i], m["probe_gb_per_second"]["after"][i]
            out.append(f"| {type_.upper()}, {t} | {pre[0]:.1f} ({pre[1]:.1f}–{pre[2]:.1f}) | "
                       f"{dec[0]:.1f} ({dec[1]:.1f}–{dec[2]:.1f}) | "
                       f"{fig[key + '.gbs']} | {fig[key + '.pct']} % | {before:.1f}, {after:.1f} |")
            if r.get("decode_allocations", 0):
                notes.append(f"{type_.upper()} on {t} threads allocated while decoding")
        fig[f"s5.{type_}.peak_mib"] = f"{m['peak_rss_bytes'] / 2**20:.0f}"
        fig[f"s5.{type_}.file_mib"] = f"{m['file_bytes'] / 2**20:.0f}"
    fig["s5.pct.min"], fig["s5.pct.max"] = f"{min(shares):.0f}", f"{max(shares):.0f}"
    goals = []
    for m in b["models"]:
        type_ = next(t for t in BYTES_PER_WEIGHT if t in Path(m["model"]).stem)
        for r in m["runs"]:
            t = r["threads"]
            share = 100 * r["decode_share_of_probe"]
            goals.append((f"{type_.upper()} decode at 80 % of the probe, {t} thread{'s' if t == 2 else ''}",
                          percent_beside(share, 80), share >= 80))
    goals_g = goals_table("**Table G.2 — the solution against its goal**, from Table G.1.", goals)
    out += ["", "Peak memory was " + " and ".join(
        f"{m['peak_rss_bytes'] / 2**20:.0f} MiB for the {m['file_bytes'] / 2**20:.0f} MiB "
        f"{next(t for t in BYTES_PER_WEIGHT if t in Path(m['model']).stem).upper()} file" for m in b["models"])
        + (", and decode steps allocated nothing." if not notes else "; " + "; ".join(notes) + ".")]
    return {"G.1": "\n".join(out), "G.goals": goals_g}


S5_KJV_COMMAND = ("./workbook bench 5 --solutions --model data/models/kjv-llama-2m/model-q8_0.gguf --format json"
                  " > docs/figures/stage05-kjv-bench.json")


def stage5_kjv(b, fig):
    (m,) = b["models"]
    out = [f"**Table G.3 — `bench 5` on `kjv-llama-2m` (Q8_0), the solution.** {caption(b, S5_KJV_COMMAND)} "
           f"{stage5_medians(b)}", "",
           "| threads | prefill 128, tokens/s | decode 64, tokens/s |", "|---|---|---|"]
    for r in m["runs"]:
        t = r["threads"]
        pre, dec = spread(r["prefill_tokens_per_second"]), spread(r["decode_tokens_per_second"])
        fig[f"s5.kjv.t{t}.decode"] = f"{dec[0]:.0f}"
        out.append(f"| {t} | {pre[0]:.0f} ({pre[1]:.0f}–{pre[2]:.0f}) | {dec[0]:.0f} ({dec[1]:.0f}–{dec[2]:.0f}) |")
    return {"G.kjv": "\n".join(out)}


S5_CONTENTION_COMMAND = ("./workbook bench 5 --solutions --contention --format json"
                         " > docs/figures/stage05-contention-bench.json")


def stage5_contention(b, fig):
    loops = b["busy_loops"]
    out = [f"**Table G.4 — `bench 5 --contention`, the solution.** {caption(b, S5_CONTENTION_COMMAND)} "
           f"Decode tokens/s on 1 and 2 threads, runs alternated, on the machine as it was and then with {loops} "
           "busy loops beside it (one per CPU)"
           + (", each run timed by the runner's clock from outside the program" if b.get("timed_from") == "outside"
              else "")
           + "; medians, with the slowest and the fastest in brackets, and the ratio of the medians.", "",
           "| model | steps | as is: 1 thread | 2 threads | 2 / 1 | busy: 1 thread | 2 threads | 2 / 1 |",
           "|---|---|---|---|---|---|---|---|"]
    for m in b["models"]:
        name = Path(m["model"]).name
        key = "kjv" if "kjv" in m["model"] else ("q4_0" if "q4_0" in name else ("q8_0" if "q8_0" in name else name))
        cells = []
        for phase in ("as_is", "busy"):
            one_t, two_t = spread(m[phase]["1"]), spread(m[phase]["2"])
            digits = 0 if one_t[0] >= 1000 else 1
            for v in (one_t, two_t):
                cells.append(f"{v[0]:.{digits}f} ({v[1]:.{digits}f}–{v[2]:.{digits}f})")
            ratio = m[f"{phase}_ratio"]
            cells.append(f"{ratio:.2f}")
            fig[f"s5.cont.{key}.{phase}_ratio"] = f"{ratio:.2f}"
        out.append(f"| `{name}` | {m['decode_steps']} | " + " | ".join(cells) + " |")
    return {"G.4": "\n".join(out)}


def render(root):
    fig = {}
    tables = {}
    tables |= stage3(load(root, 3), fig)
    tables |= stage4(load(root, 4), fig)
    tables |= stage5(load(root, 5), fig, fig)
    tables |= stage5_kjv(load(root, 5, "-kjv"), fig)
    tables |= stage5_contention(load(root, 5, "-contention"), fig)
    return tables, fig


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("--write", action="store_true", help="rewrite the docs' tables and figures from the JSON")
    args = ap.parse_args()
    try:
        tables, fig = render(args.root)
    except KeyError as e:
        sys.exit(f"bench_figures: the committed bench JSON lacks {e}")
    problems, named = [], set()
    for doc in DOCS:
        path = args.root / doc
        text = path.read_text()

        def table(m):
            name = m.group(2)
            named.add(name)
            if name not in tables:
                problems.append(f"{doc}: table {name} is not one this script renders")
                return m.group(0)
            want = tables[name] + "\n"
            if m.group(3) != want:
                problems.append(f"{doc}: Table {name} differs from the bench JSON")
            return m.group(1) + want + m.group(4)

        def figure(m):
            key, shown = m.group(1), m.group(2)
            line = text.count("\n", 0, m.start()) + 1
            if key not in fig:
                problems.append(f"{doc}:{line}: figure {key} is not one the bench JSON gives")
                return m.group(0)
            if shown != fig[key]:
                problems.append(f"{doc}:{line}: {key} is quoted as {shown}; the bench JSON gives {fig[key]}")
            return f"<!--fig:{key}-->{fig[key]}"

        for number, line in enumerate(text.split("\n"), 1):
            if re.match(r"\s*<!--fig:", line):
                problems.append(f"{doc}:{number}: a figure marker starts the line, where Markdown reads it as an "
                                "HTML block and ends the paragraph; move a word in front of it")
        new = FIGURE.sub(figure, TABLE.sub(table, text))
        if args.write and new != text:
            path.write_text(new)
    missing = sorted(set(tables) - named)
    problems += [f"Table {t} appears in no doc" for t in missing]
    if args.write:
        problems = [p for p in problems if "differs" not in p and "quoted as" not in p]
    for p in problems:
        print(p)
    if problems:
        print(f"bench_figures: {len(problems)} problem(s); `{sys.argv[0]} ROOT --write` rewrites tables "
              "and figures from docs/figures/stage0N-bench.json")
        return 1
    print(f"bench_figures: {len(tables)} tables and every quoted figure agree with the bench JSON")
    return 0


if __name__ == "__main__":
    sys.exit(main())
