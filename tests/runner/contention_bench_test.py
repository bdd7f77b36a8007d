#!/usr/bin/env python3
"""`workbook bench 5 --contention`: its report, its usage errors, and busy loops that stop.

Usage: contention_bench_test.py WORKBOOK SOURCE_ROOT

The bench times decode on 1 and 2 threads, as the machine is and with one busy loop per online
CPU beside it. What it measures depends on the machine, so nothing here judges a speed; this
test holds it to what does not:
  - the JSON report: one busy loop per online CPU, both phases with seven positive rates on 1 and
    on 2 threads, the two ratios computed from those medians, the four goals named;
  - the busy loops are gone when the bench has ended: this test makes itself the subreaper of
    the bench's orphans (prctl PR_SET_CHILD_SUBREAPER), so a loop the bench failed to stop would
    become this test's child, and be found;
  - --contention is refused for other stages, and with --plot, before anything is timed.
"""
import ctypes, json, os, statistics, subprocess, sys, tempfile

PR_SET_CHILD_SUBREAPER = 36


def children_of_this_process():
    me = str(os.getpid())
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me:  # fields after the name: state, ppid, ...
            found.append(int(entry))
    return found


def main():
    workbook, root = sys.argv[1], sys.argv[2]
    os.chdir(root)
    failures = []
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("cannot become a subreaper: prctl failed", file=sys.stderr)
        return 1

    model = "data/models/kjv-llama-2m/model-q8_0.gguf"
    # Output into files, not pipes: a busy loop left running would hold a pipe open, and the
    # test would wait for it instead of finding it.
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        status = subprocess.call([workbook, "bench", "5", "--solutions", "--contention", "--model", model, "--format",
                                  "json"], stdout=stdout, stderr=stderr, timeout=900)
        stdout.seek(0)
        stderr.seek(0)
        out = subprocess.CompletedProcess([], status, stdout.read(), stderr.read())
    leftovers = children_of_this_process()
    if leftovers:
        failures.append(f"busy loops still running after the bench ended: pids {leftovers}")
        for pid in leftovers:
            os.kill(pid, 9)
    for pid in leftovers:
        os.waitpid(pid, 0)
    if out.returncode != 0:
        failures.append(f"bench 5 --contention: exit {out.returncode}: {out.stderr.strip()[-600:]}")
    else:
        report = json.loads(out.stdout)
        cpus = os.sysconf("SC_NPROCESSORS_ONLN")
        if report.get("mode") != "contention" or report.get("busy_loops") != cpus:
            failures.append(f"mode {report.get('mode')!r}, busy loops {report.get('busy_loops')} on {cpus} CPUs")
        models = report.get("models", [])
        if [m["model"] for m in models] != [model]:
            failures.append(f"models {[m['model'] for m in models]}, not [{model!r}]")
        for m in models:
            for phase, ratio in (("as_is", "as_is_ratio"), ("busy", "busy_ratio")):
                rates = m.get(phase, {})
                if sorted(rates) != ["1", "2"] or any(len(rates[t]) != 7 or min(rates[t]) <= 0 for t in rates):
                    failures.append(f"{phase}: rates {rates}")
                    continue
                expected = statistics.median(rates["2"]) / statistics.median(rates["1"])
                if abs(m.get(ratio, 0) - expected) > 1e-9 * expected:
                    failures.append(f"{ratio} {m.get(ratio)}, but the medians give {expected}")
        names = [g["goal"] for g in report.get("goals", [])]
        if len(names) != 2 or not any("busy loops" in n for n in names) or not any("as is" in n for n in names):
            failures.append(f"goals {names}")

    for args, says in ((["bench", "3", "--solutions", "--contention"], "bench 3 takes no --contention: it is an option of `bench 5`"),
                       (["bench", "5", "--solutions", "--contention", "--plot", "/tmp/never.svg"], "--plot")):
        out = subprocess.run([workbook] + args, capture_output=True, text=True, timeout=300)
        if out.returncode != 2 or says not in out.stderr:
            failures.append(f"{' '.join(args)}: exit {out.returncode}, stderr {out.stderr.strip()[-300:]!r}")

    for f in failures:
        print("FAIL:", f)
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
