#!/usr/bin/env python3
"""The launcher answers `--help` from committed texts, so that no help builds anything.

Usage: help_texts_test.py WORKBOOK HELP_DIR LAUNCHER [--write]
  WORKBOOK  the built runner (build/workbook); it hands generate, inspect, reference and
            convert to the executables beside it, which must be built too
  HELP_DIR  data/help: one file per command (workbook.txt for the top level, check.txt, ...)
  LAUNCHER  the ./workbook script
  --write   rewrite HELP_DIR from WORKBOOK instead of comparing (after changing an option)

Three things are checked. Every command the runner's own help lists has a text, and every
text names a command that exists. Each text is exactly what the built runner prints for
`COMMAND --help` today, so a text cannot drift from the options it describes. And the
launcher, copied into a folder with no build and no meson on its PATH, prints that text for
`./workbook COMMAND --help` (and `-h`, and `help`) without trying to build or install anything.
"""
import difflib, os, re, shutil, subprocess, sys, tempfile


def runner_help(workbook, command):
    args = [workbook] + ([command] if command else []) + ["--help"]
    ran = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if ran.returncode != 0:
        sys.exit(f"FAIL: {' '.join(args)} exited {ran.returncode}: {ran.stderr.strip()}")
    return ran.stdout


def listed_commands(top_help):
    # CLI11 lists subcommands under "Subcommands:", one per line, name first.
    part = top_help.split("Subcommands:", 1)
    if len(part) != 2:
        sys.exit("FAIL: the runner's --help lists no subcommands")
    return [m.group(1) for m in re.finditer(r"^  (\S+)", part[1], re.M)]


def text_name(command):
    return (command or "workbook") + ".txt"


def main():
    if len(sys.argv) not in (4, 5) or (len(sys.argv) == 5 and sys.argv[4] != "--write"):
        sys.exit(__doc__)
    workbook, help_dir, launcher = sys.argv[1:4]
    write = len(sys.argv) == 5
    top = runner_help(workbook, None)
    commands = listed_commands(top)
    if len(commands) < 5:
        sys.exit(f"FAIL: only {commands} found in the runner's help")
    expected = {text_name(None): top}
    for command in commands:
        expected[text_name(command)] = runner_help(workbook, command)

    if write:
        os.makedirs(help_dir, exist_ok=True)
        for name in os.listdir(help_dir):
            if name.endswith(".txt") and name not in expected:
                os.remove(os.path.join(help_dir, name))
        for name, text in expected.items():
            with open(os.path.join(help_dir, name), "w") as f:
                f.write(text)
        print(f"wrote {len(expected)} help texts into {help_dir}")
        return

    failures = []
    present = sorted(n for n in os.listdir(help_dir) if n.endswith(".txt"))
    for name in present:
        if name not in expected:
            failures.append(f"{help_dir}/{name} is the help of no command the runner has")
    for name, text in expected.items():
        path = os.path.join(help_dir, name)
        if not os.path.exists(path):
            failures.append(f"{path} is missing")
            continue
        with open(path) as f:
            committed = f.read()
        if committed != text:
            diff = "".join(difflib.unified_diff(committed.splitlines(True), text.splitlines(True),
                                                f"{path} (committed)", "the runner's --help"))
            failures.append(f"{path} differs from the runner's help:\n{diff}")
    print(f"ok {len(expected)} texts: {', '.join(sorted(expected))}")

    # The launcher alone: no build folder, no meson, no ninja, no compiler on its PATH.
    with tempfile.TemporaryDirectory() as tree:
        shutil.copy(launcher, os.path.join(tree, "workbook"))
        shutil.copytree(help_dir, os.path.join(tree, "data", "help"))
        bare_path = tempfile.mkdtemp()
        for tool in ("sh", "cat", "dirname", "id"):  # what the help path of the script may use
            found = shutil.which(tool)
            if found:
                os.symlink(found, os.path.join(bare_path, tool))
        env = {"PATH": bare_path, "HOME": tree}
        asks = [(["--help"], None), (["help"], None), (["-h"], None)]
        asks += [([c, "--help"], c) for c in commands] + [([c, "-h"], c) for c in commands]
        asks += [(["check", "3", "--help"], "check"), (["bench", "5", "--stages-dir", "x", "-h"], "bench")]
        for args, command in asks:
            ran = subprocess.run([os.path.join(tree, "workbook")] + args, capture_output=True, text=True,
                                 env=env, timeout=30)
            label = "./workbook " + " ".join(args)
            if ran.returncode != 0:
                failures.append(f"{label} exited {ran.returncode} without a build: {ran.stderr.strip()}")
            elif expected[text_name(command)] not in ran.stdout:
                failures.append(f"{label} did not print {text_name(command)}:\n{ran.stdout}{ran.stderr}")
            if os.path.exists(os.path.join(tree, "build")):
                failures.append(f"{label} created build/")
                shutil.rmtree(os.path.join(tree, "build"))
        shutil.rmtree(bare_path)
        print(f"ok the launcher answered {len(asks)} help requests with no build and no tools")

    if failures:
        print("\n".join("FAIL: " + f for f in failures))
        print(f"(after changing an option: python3 {sys.argv[0]} {workbook} {help_dir} {launcher} --write)")
        sys.exit(1)


if __name__ == "__main__":
    main()
