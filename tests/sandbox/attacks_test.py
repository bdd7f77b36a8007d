#!/usr/bin/env python3
"""Each attack of a hostile student, as a stage-1 file run through `workbook check`.

Usage: attacks_test.py WORKBOOK SOLUTION HIDDEN
  WORKBOOK  the built workbook
  SOLUTION  solutions/01-block/block.cc (most attacks are the solution plus an attack, so that
            a grade it cannot change is a pass)
  HIDDEN    data/stage01/hidden-example.json, copied into a folder of the test's own and
            graded as the hidden suite

For every attack: the runner survives (exit 0 or 1, a report that parses), the report names
what happened, the grade is what the arithmetic deserves, and no line of the hidden suite
appears in any of the four report formats. What the machine does not allow (namespaces) is
said and skipped, not failed.
"""
import json, math, os, secrets, shutil, subprocess, sys, tempfile, time

FORMATS = ["json", "text", "junit", "gradescope"]


def main():
    workbook, solution, hidden_source = sys.argv[1:4]
    solution_text = open(solution).read()
    failures = []

    def check(ok, what):
        print(("ok    " if ok else "FAIL  ") + what)
        if not ok:
            failures.append(what)

    with tempfile.TemporaryDirectory(prefix="wb-attacks-") as work:
        os.chmod(work, 0o755)
        secret = os.path.join(work, "grader")
        os.makedirs(secret)
        hidden = os.path.join(secret, "hidden.json")
        # The hidden suite, each case's description a secret of its own (none may be printed).
        suite = json.load(open(hidden_source))
        marker = "secret-" + secrets.token_hex(6)
        for i, case in enumerate(suite["cases"]):
            case["description"] = f"{marker}-{i}: " + case.get("description", "")
        json.dump(suite, open(hidden, "w"), indent=2)
        os.chmod(hidden, 0o644)  # readable by anyone on the host: only the view keeps it out
        hidden_lines = [marker] + [json.dumps(c["description"])[1:-1][:60] for c in suite["cases"]]

        def run(name, source, extra=(), formats=FORMATS, cases=hidden, timeout=600):
            """Runs the file through check in each format; returns {format: (rc, text)}, and
            checks the runner survived and leaked no line of the hidden suite."""
            stage = os.path.join(work, name, "stages", "01-block")
            os.makedirs(stage, exist_ok=True)
            open(os.path.join(stage, "block.cc"), "w").write(source)
            results = {}
            for fmt in formats:
                begin = time.monotonic()
                p = subprocess.run([workbook, "check", "1", "--stages-dir", os.path.dirname(stage), "--cases", cases,
                                    "--format", fmt, *extra], capture_output=True, text=True, timeout=timeout)
                results[fmt] = (p.returncode, p.stdout, p.stderr, time.monotonic() - begin)
                leaked = [line for line in hidden_lines if line in p.stdout or line in p.stderr]
                check(p.returncode in (0, 1) and not leaked,
                      f"{name} [{fmt}]: the runner survived (exit {p.returncode}) and no hidden line is in the report"
                      + (f" LEAKED {leaked[0]!r}" if leaked else "")
                      + (f" stderr: {p.stderr.strip()[:300]}" if p.returncode not in (0, 1) else ""))
            return results

        def report(results):
            try:
                return json.loads(results["json"][1])
            except (KeyError, ValueError):
                return {}

        sandbox = report(run("baseline", solution_text, formats=["json"])).get("sandbox", {})
        in_force = " ".join(sandbox.get("in_force", []))
        has_view = "filesystem view" in in_force
        if not has_view:
            print("skipped: this machine refuses namespaces, so the attacks that read the grader's files are "
                  "checked for not leaking only (the report says: %s)" % sandbox.get("missing"))

        # 1. The hidden suite as an include: the compiler would quote its lines in its errors.
        for what, line in [("include-hidden", f'#include "{hidden}"'), ("include-stdin", '#include "/dev/stdin"'),
                           ("incbin-hidden", f'asm(".incbin \\"{hidden}\\"");')]:
            results = run(what, line + "\n" + solution_text)
            r = report(results)
            check(r.get("status") == "compile_error", f"{what}: the file does not compile")
            if has_view:
                check("the contract headers" in results["text"][1] or what == "incbin-hidden",
                      f"{what}: the report says what a stage file may include")

        # 2. A main of its own, to replace the harness.
        results = run("define-main", solution_text + "\nint main() { return 0; }\n", formats=["json", "text"])
        check(report(results).get("status") == "compile_error" and "multiple definition of `main'" in results["text"][1]
              and "the harness is the program around it" in results["text"][1],
              "define-main: a link error that says the harness has the entry point")

        # 3. A compile that never ends, and one with thousands of errors.
        forever = ("constexpr long Spin() { long s = 0; for (long i = 0; i < 100000; ++i) "
                   "for (long j = 0; j < 100000; ++j) s += i ^ j; return s; }\n"
                   "static_assert(Spin() != 1);\n")
        results = run("compile-forever", forever + solution_text, extra=["--compile-time-limit", "3"],
                      formats=["json", "text"])
        check(report(results).get("status") == "compile_error" and "time limit" in results["text"][1]
              and results["text"][3] < 60,
              f"compile-forever: stopped at the compile time limit ({results['text'][3]:.1f} s)")
        check("Fix the first error above" not in results["text"][1]
              and "what makes the compiler work that long" in results["text"][1],
              "compile-forever: the advice is about the compile's length, not a first error")
        errors = "".join(f"int e{i} = undefined_name_{i};\n" for i in range(4000))
        results = run("many-errors", errors + solution_text, formats=["json", "text"])
        compiler = report(results).get("compiler_output", "") or results["text"][1]
        check(len(results["json"][1]) < 64 * 1024 and "more errors, not shown" in results["text"][1],
              f"many-errors: the report is {len(results['json'][1])} bytes, the first errors and a count")

        # 4. 3 GiB in a static constructor, before the harness could set a limit.
        big = ("#include <cstring>\n#include <vector>\n"
               "namespace { struct Hog { std::vector<char> bytes; Hog() : bytes(3ull << 30) "
               "{ std::memset(bytes.data(), 1, bytes.size()); } } hog; }\n")
        r = report(run("static-3gib", big + solution_text, formats=["json", "text"]))
        statuses = {c.get("status") for c in r.get("cases", [])}
        check(r.get("status") == "fail" and statuses <= {"crash", "exited_early"},
              f"static-3gib: every case fails as a crash, under the memory limit (statuses {sorted(statuses)})")

        # The solution under another name, and a decoder_block of the attack's that calls it
        # and then does `after` (with the outputs in scope).
        def wrapped(after, top=""):
            return (top + "#define decoder_block decoder_block_solution\n" + solution_text + "\n#undef decoder_block\n"
                    "void decoder_block(int T, const float* w, const float* x, const float* ropeCos, "
                    "const float* ropeSin, float* norm1, float* q, float* k, float* v, float* attnOut, "
                    "float* residual1, float* norm2, float* ffnOut, float* output) {\n"
                    "  decoder_block_solution(T, w, x, ropeCos, ropeSin, norm1, q, k, v, attnOut, residual1, norm2, "
                    "ffnOut, output);\n" + after + "\n}\n")

        # 5. The region's layout rewritten from inside the stage function (a second mapping of
        # its descriptor): the runner keeps its own copy of the layout, so the grade is the
        # solution's, and nothing crashes.
        corrupt = wrapped("  void* page = mmap(nullptr, 40000, PROT_READ | PROT_WRITE, MAP_SHARED, 3, 0);\n"
                          "  if (page != MAP_FAILED) std::memset(static_cast<char*>(page) + 16, 0x7f, 40000 - 16);",
                          top="#include <sys/mman.h>\n#include <cstring>\n")
        r = report(run("corrupt-header", corrupt, formats=["json"]))
        check(r.get("status") == "pass", f"corrupt-header: the grade is the solution's ({r.get('status')})")

        # 6. Bytes of the case in the error's digits: a hidden report gives only a power of ten.
        r = report(run("digits", wrapped("  output[0] += 0.0123456f * (1 + T % 7);"), formats=["json"]))
        errors = [cp.get("max_abs_error") for c in r.get("cases", []) if c.get("hidden") for cp in c.get("checkpoints", [])]
        powers = [e for e in errors if isinstance(e, (int, float)) and e > 0]
        check(bool(powers) and all(abs(math.log10(e) - round(math.log10(e))) < 1e-9 for e in powers),
              f"digits: every hidden max_abs_error is a power of ten ({sorted(set(powers))[:4]})")

        # 7. Overflowing the stack: named as such.
        deep = wrapped("  volatile char big[64 << 20]; big[0] = 1; (void)big[0];")
        results = run("stack-overflow", deep, formats=["json"], extra=["--show-hidden"])
        text = results["json"][1]
        check("stack overflow" in text, "stack-overflow: the crash is named a stack overflow")

        # 8. A constructor that exits: the student's doing, not the runner's.
        exits = "#include <cstdlib>\nnamespace { struct Quit { Quit() { std::exit(98); } } quit; }\n" + solution_text
        results = run("constructor-exits", exits, formats=["json", "text"], extra=["--show-hidden"])
        check(report(results).get("status") == "fail" and "before decoder_block was even called" in results["text"][1],
              "constructor-exits: reported as the student's code ending the process before the call")

        # 9. Two checks of one tree at once: the second edits the file and rebuilds once the
        # first's build is in place; each must grade its own build. The first's compile is
        # watched by its own folder (.compile-PID-...), since other tests share the cache.
        cache = os.path.join(os.path.dirname(os.path.abspath(workbook)), "student")

        def compiling(pid):
            prefix = f".compile-{pid}-"
            return os.path.isdir(cache) and any(n.startswith(prefix) for n in os.listdir(cache))

        def start_check(tree):
            return subprocess.Popen([workbook, "check", "1", "--stages-dir", tree, "--format", "json"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        def wait_until(condition, process):
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and process.poll() is None and not condition():
                time.sleep(0.01)
            return condition()

        def status_of(text):
            return json.loads(text).get("status") if text.strip().startswith("{") else None

        tree = os.path.join(work, "concurrent", "stages")
        stage = os.path.join(tree, "01-block")
        os.makedirs(stage)
        open(os.path.join(stage, "block.cc"), "w").write(solution_text)
        first = start_check(tree)
        began = wait_until(lambda: compiling(first.pid), first)
        ended = wait_until(lambda: not compiling(first.pid), first)
        open(os.path.join(stage, "block.cc"), "w").write(wrapped("  output[0] += 1.0f;"))
        second = subprocess.run([workbook, "check", "1", "--stages-dir", tree, "--format", "json"],
                                capture_output=True, text=True, timeout=600)
        out, _ = first.communicate(timeout=600)
        statuses = [status_of(text) for text in (out, second.stdout)]
        check(began and ended and statuses == ["pass", "fail"],
              f"concurrent: each check graded its own build ({statuses}; the first's compile seen: {began}, {ended})")

        # 9b. The file saved while the compiler runs: what the compiler made may hold either
        # text, so it is no build of either; the check compiles again and grades the newest.
        # The first text makes the compiler work for seconds (four constant evaluations of
        # about a second and a half each here), so that the edit, half a second in, lands after
        # the compiler read the file and long before it ends, on a machine several times faster
        # too.
        edited = os.path.join(work, "edit-while-compiling", "stages")
        os.makedirs(os.path.join(edited, "01-block"))
        edited_file = os.path.join(edited, "01-block", "block.cc")
        slow = "".join(f"constexpr long Spin{k}() {{ long s = 0; for (long i = 0; i < 1000; ++i) "
                       f"for (long j = 0; j < 1000; ++j) s += i ^ (j + {k}); return s; }}\n"
                       f"static_assert(Spin{k}() != 1);\n" for k in range(4))
        open(edited_file, "w").write(slow + solution_text)
        first = start_check(edited)
        began = wait_until(lambda: compiling(first.pid), first)
        time.sleep(0.5)
        during = compiling(first.pid)
        open(edited_file, "w").write(wrapped("  output[0] += 1.0f;"))
        out, err = first.communicate(timeout=600)
        check(began and during and status_of(out) == "fail",
              f"edit-while-compiling: the check graded the file as saved last ({status_of(out)}; "
              f"the compile seen: {began}, still running at the edit: {during}; {err.strip()[:160]})")

        # 10. A case file whose scales overflow the reference: bad case data, not a grade.
        huge = os.path.join(secret, "huge.json")
        json.dump({"stage": 1, "cases": [{"name": "huge", "T": 2, "seed": 1, "w_scale": 1e39}]}, open(huge, "w"))
        p = subprocess.run([workbook, "check", "1", "--stages-dir", tree, "--cases", huge, "--format", "json"],
                           capture_output=True, text=True, timeout=600)
        check(p.returncode == 2 and "too large to grade" in p.stderr and huge in p.stderr and not p.stdout.strip(),
              f"huge-scales: refused as bad case data, naming the file (exit {p.returncode}: {p.stderr.strip()[:160]})")

        # 11. A runner killed by a watchdog leaves its run folders; the next check removes
        # them (their runner is dead), and not those of a runner still alive (this test).
        dead = subprocess.Popen(["true"])
        dead.wait()
        temporary = tempfile.gettempdir()
        left = [os.path.join(temporary, f"wb-sandbox-{dead.pid}-leftover"), os.path.join(cache, f".compile-{dead.pid}-leftover")]
        alive = [os.path.join(temporary, f"wb-sandbox-{os.getpid()}-inuse"), os.path.join(cache, f".compile-{os.getpid()}-inuse")]
        for folder in left + alive:
            os.makedirs(os.path.join(folder, "view"), exist_ok=True)
        open(os.path.join(stage, "block.cc"), "a").write("\n// one more edit, so that the file compiles again\n")
        p = subprocess.run([workbook, "check", "1", "--stages-dir", tree, "--format", "json"],
                           capture_output=True, text=True, timeout=600)
        check(p.returncode in (0, 1) and not any(os.path.exists(f) for f in left) and all(os.path.isdir(f) for f in alive),
              f"leftovers: a dead runner's run folders are removed, a live one's kept "
              f"(left: {[f for f in left if os.path.exists(f)]}, kept: {[f for f in alive if os.path.isdir(f)]})")
        for folder in alive:
            shutil.rmtree(folder, ignore_errors=True)

        # 12. The cache trusts a build only while every file its compile read (the system's
        # headers too) is as it was: a record that no longer matches means a rebuild.
        source = os.path.join(stage, "block.cc")

        def text_of(path):  # other tests share the cache, and prune their own builds meanwhile
            try:
                return open(path).read()
            except FileNotFoundError:
                return ""

        records = sorted((os.path.join(cache, n) for n in os.listdir(cache) if n.endswith(".headers")
                          and source in text_of(os.path.join(cache, n))), key=os.path.getmtime)[-1:]
        check(len(records) == 1 and any("/usr/include/" in line for line in open(records[0])),
              f"headers: the newest build of this tree has a record of what it read, system headers included")
        if len(records) == 1:
            build = records[0][:-len(".headers")]
            lines = open(records[0]).read().splitlines()
            system = next(i for i, line in enumerate(lines) if "/usr/include/" in line)
            lines[system] = "1 1 " + lines[system].split(" ", 2)[2]  # as if that header had changed since
            stale = lines[system]
            open(records[0], "w").write("\n".join(lines) + "\n")
            built = os.stat(build).st_mtime_ns
            p = subprocess.run([workbook, "check", "1", "--stages-dir", tree, "--format", "json"],
                               capture_output=True, text=True, timeout=600)
            check(p.returncode in (0, 1) and os.stat(build).st_mtime_ns != built
                  and stale not in open(records[0]).read().splitlines(),
                  "headers: a changed system header makes the next check rebuild, and records it anew")

        # 13. Into the runner's process group, then asleep: the time limit's kill of the child's
        # group would reach nothing, and a wait for the child would never end. The filter
        # refuses the move (the child stays in its group); the runner ends a child past its
        # limit by its pid too, and waits for it a bounded time.
        joins = wrapped("  setpgid(0, getpgid(getppid()));\n  for (;;) pause();", top="#include <unistd.h>\n")
        begin = time.monotonic()
        try:
            r = report(run("setpgid-sleep", joins, formats=["json"], extra=["--time-limit", "2"], timeout=300))
        except subprocess.TimeoutExpired:
            r = {"status": "the runner hung"}
        statuses = {c.get("status") for c in r.get("cases", [])}
        check(r.get("status") == "fail" and statuses == {"timeout"},
              f"setpgid-sleep: every case ends at its time limit ({r.get('status')}, {sorted(statuses)}, "
              f"{time.monotonic() - begin:.0f} s)")

        # 13b. Right buffers, then a crash, the time limit or a flood of output: the run did not
        # end as a program should, so each case scores 0 and its test says why, in every report.
        def gradescope(results):
            try:
                return json.loads(results["gradescope"][1])
            except (KeyError, ValueError):
                return {}

        for name, after, extra, why in [
                ("crash-after-writing", "  raise(SIGSEGV);", [], "crashed"),
                ("timeout-after-writing", "  for (;;) pause();", ["--time-limit", "2"], "time limit"),
                ("flood-after-writing", "  for (int i = 0; i < (3 << 20); ++i) std::putchar('x');", [],
                 "output limit")]:
            results = run(name, wrapped(after, top="#include <csignal>\n#include <cstdio>\n#include <unistd.h>\n"),
                          formats=["json", "gradescope"], extra=extra, timeout=300)
            g = gradescope(results)
            tests = g.get("tests", [])
            check(bool(tests) and g.get("score") == 0 and all(t.get("score") == 0 and why in t.get("output", "")
                                                             for t in tests),
                  f"{name}: every case scores 0 and says it {why} (score {g.get('score')}; "
                  f"{[t.get('output', '')[:80] for t in tests][:1]})")
            cases = report(results).get("cases", [])
            check(bool(cases) and all(why in (c.get("zeroed_because") or "") for c in cases)
                  and all(cp.get("points") == 0 for c in cases for cp in c.get("checkpoints", [])),
                  f"{name}: the JSON report gives each case 0 points, and why")

        # 13c. A hidden buffer never written says so, not "max error about 0e+00".
        never = ("#include <vector>\n#define decoder_block decoder_block_solution\n" + solution_text
                 + "\n#undef decoder_block\n"
                 "void decoder_block(int T, const float* w, const float* x, const float* ropeCos, "
                 "const float* ropeSin, float* norm1, float* q, float* k, float* v, float* attnOut, "
                 "float* residual1, float* norm2, float* ffnOut, float* output) {\n"
                 "  static std::vector<float> elsewhere(1 << 22);\n"
                 "  decoder_block_solution(T, w, x, ropeCos, ropeSin, norm1, q, k, v, attnOut, residual1, norm2, "
                 "ffnOut, elsewhere.data());\n  (void)output;\n}\n")
        results = run("never-written", never, formats=["text", "gradescope", "junit"])
        outputs = " ".join(t.get("output", "") for t in gradescope(results).get("tests", []))
        check("never written" in outputs and "nothing of it was written" in results["text"][1]
              and "never written" in results["junit"][1],
              f"never-written: a hidden buffer never written is named so in every format ({outputs[:160]!r})")

        # 14. The solution by another name: a symbolic link to it, a hard link to it, the stage's
        # folder a link to the solution's, a FIFO. Each is refused (bad usage, exit 2) with a
        # message naming the file and why, and never graded.
        solution_dir = os.path.dirname(os.path.abspath(solution))

        def refused(name, make):
            tree = os.path.join(work, name, "stages")
            os.makedirs(tree)
            try:
                make(os.path.join(tree, "01-block"))
            except OSError as e:  # a hard link across file systems: say so, do not pass silently
                check(False, f"{name}: could not set the attack up ({e})")
                return
            p = subprocess.run([workbook, "check", "1", "--stages-dir", tree, "--cases", hidden, "--format", "json"],
                               capture_output=True, text=True, timeout=600)
            check(p.returncode == 2 and not p.stdout.strip() and "01-block" in p.stderr and "graded" in p.stderr,
                  f"{name}: refused, no grade (exit {p.returncode}: {p.stderr.strip()[:200]}; stdout {p.stdout[:80]!r})")

        def symlinked(stage):
            os.makedirs(stage)
            os.symlink(os.path.abspath(solution), os.path.join(stage, "block.cc"))

        def hard_linked(stage):
            os.makedirs(stage)
            mine = os.path.join(work, "solution-copy.cc")  # a second name of a file outside the submission
            shutil.copyfile(solution, mine)
            os.link(mine, os.path.join(stage, "block.cc"))

        def folder_linked(stage):
            os.symlink(solution_dir, stage)

        def fifo(stage):
            os.makedirs(stage)
            os.mkfifo(os.path.join(stage, "block.cc"))

        for name, make in [("symlink", symlinked), ("hard-link", hard_linked), ("folder-symlink", folder_linked),
                           ("fifo", fifo)]:
            refused(name, make)

        # 15. The solution included by its absolute path: the compiler sees only the stage's
        # files, the contracts and the system's headers, so it is not there (with a view) or
        # the build is refused (without one).
        r = report(run("include-solution", f'#include "{os.path.abspath(solution)}"\n', formats=["json"]))
        check(r.get("status") == "compile_error", f"include-solution: not graded ({r.get('status')})")

    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
