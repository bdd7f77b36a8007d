#!/usr/bin/env python3
"""A student file attacks the runner from a static constructor; the grade must not change.

Usage: hostile_student_test.py WORKBOOK SOLUTION ATTACK
  WORKBOOK  the built workbook
  SOLUTION  solutions/01-block/block.cc
  ATTACK    hostile_student.cc.in, appended to the solution

As root (CI, Gradescope) the child runs as an unprivileged uid: the runner must survive the
kill, the report written to --output must be the runner's own, the runner's memory must stay
closed, and the report must say which protections were in force. As an ordinary user the
runner has fewer protections, and the report must say so; the kill is not attempted there (it
would succeed), and the test prints what it skipped. Either way the setsid daemon must be dead
before it can write its file.
"""
import json, os, subprocess, sys, tempfile, time

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
        text = open(solution).read() + "\n" + open(attack).read().replace("@DIR@", work).replace("@KILL@", "1" if root else "0")
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
        check("attack: open the runner's memory: opened" not in said, "the child could not open the runner's memory")
        sandbox = report.get("sandbox", {})
        check(bool(sandbox.get("in_force")) and "missing" in sandbox, "the report states the protections in force and missing")
        if root:
            check("attack: uid 65533" in said, "the child ran as uid 65533")
            check("attack: kill the runner: Operation not permitted" in said, "the kill was refused")
            check("attack: forge the report: Permission denied" in said, "the forged report could not be written")
        else:
            check(any("unprivileged uid" in m for m in sandbox.get("missing", [])),
                  "as an ordinary user the report says the uid is not dropped")
            print("skipped: not root, so the kill and the forged report are not protected here "
                  "(the report says so); CI and Gradescope run as root, where they are checked")
        time.sleep(4)
        check(not os.path.exists(os.path.join(work, "daemon-outlived-the-run")), "the setsid daemon was killed with the run")
    return 1 if failures else 0

if __name__ == "__main__":
    sys.exit(main())
