#!/usr/bin/env python3
"""A student file attacks the runner from a static constructor; the grade must not change.

Usage: hostile_student_test.py WORKBOOK SOLUTION ATTACK
  WORKBOOK  the built workbook
  SOLUTION  solutions/01-block/block.cc
  ATTACK    hostile_student.cc.in, appended to the solution

Everywhere the seccomp filter refuses the kill, and the runner's memory stays closed. Where
the machine allows namespaces, the report path is not in the child's view at all; where it
does not, as root the child's uid cannot write it, and as an ordinary user nothing stops it
(the report must say so, and the test prints what it skipped). Either way the report written
to --output must be the runner's own, the report must say which protections were in force,
and the setsid daemon must be gone when the check ends.
"""
import json, os, secrets, subprocess, sys, tempfile, time

def open_comm(pid):
    try:
        return open(f"/proc/{pid}/comm").read().strip()
    except OSError:
        return ""

def main():
    workbook, solution, attack = sys.argv[1:4]
    root = os.geteuid() == 0
    failures = []
    def check(ok, what):
        print(("ok    " if ok else "FAIL  ") + what)
        if not ok:
            failures.append(what)
    with tempfile.TemporaryDirectory(prefix="wb-hostile-") as work:
        # A folder the daemon could write to (world-writable, like /tmp), and one for the
        # report that only the runner's user may write, as Gradescope's results folder.
        os.chmod(work, 0o777)
        stage = os.path.join(work, "stages", "01-block")
        os.makedirs(stage)
        reports = os.path.join(work, "results")
        os.makedirs(reports, mode=0o755)
        daemon = "wbd-" + secrets.token_hex(4)
        text = open(solution).read() + "\n" + open(attack).read().replace("@DIR@", work).replace("@DAEMON@", daemon)
        open(os.path.join(stage, "block.cc"), "w").write(text)
        output = os.path.join(reports, "report.json")
        run = subprocess.run([workbook, "check", "1", "--stages-dir", os.path.join(work, "stages"),
                              "--format", "json", "--output", output],
                             capture_output=True, text=True, timeout=600)
        check(run.returncode == 0, f"the runner finished and graded the (correct) file: exit {run.returncode} {run.stderr.strip()[:300]}")
        report = json.load(open(output)) if os.path.exists(output) else {}
        check(report.get("status") == "pass" and "forged" not in report and len(report.get("cases", [])) > 1,
              "the report at --output is the runner's own, not the forged one")
        said = report.get("cases", [{}])[0].get("output", "")
        print("  the child said: " + " | ".join(l for l in said.splitlines() if l.startswith("attack:")))
        check("attack: uid" in said, "the attack ran, and its output reached the report")
        check("attack: open the runner's memory: opened" not in said, "the child could not open the runner's memory")
        sandbox = report.get("sandbox", {})
        check(bool(sandbox.get("in_force")) and "missing" in sandbox, "the report states the protections in force and missing")
        check("attack: kill the runner: Operation not permitted" in said, "the kill was refused (seccomp)")
        in_force = " ".join(sandbox.get("in_force", []))
        if root:
            check("attack: uid 65533" in said, "the child ran as uid 65533")
        if "filesystem view" in in_force:
            check("attack: forge the report: No such file or directory" in said,
                  "the report's folder is not in the child's filesystem view")
        elif root:
            check("attack: forge the report: Permission denied" in said, "the forged report could not be written")
        else:
            check(any("namespaces" in m for m in sandbox.get("missing", [])),
                  "without namespaces, as an ordinary user, the report says the filesystem view is missing")
            print("skipped: no namespaces and not root, so nothing keeps the child from the report's folder "
                  "(the report says so); CI and Gradescope run as root, where it is checked")
        if "a /proc of the child's own" in in_force:
            check("attack: see the runner in /proc: No such file or directory" in said,
                  "the runner does not exist in the child's /proc")
        else:
            check("attack: see the runner in /proc:" in said, "the child looked for the runner in /proc")
            print("skipped: the child's /proc is the host's (only root may mount one of its own; the report says so)")
        # The run is over: no process of the daemon's name may be left, and no proof of it.
        left = [p for p in os.listdir("/proc") if p.isdigit() and open_comm(p) == daemon]
        check(not left, f"the setsid daemon was gone when the check ended (left: {left})")
        notes = " ".join(n for c in report.get("cases", []) for n in c.get("notes", []))
        check("left 1 process running" in notes, "the report says the child left a process running, and it was killed")
        time.sleep(4)
        check(not os.path.exists(os.path.join(work, "daemon-outlived-the-run")), "the daemon wrote nothing afterwards")
    return 1 if failures else 0

if __name__ == "__main__":
    sys.exit(main())
