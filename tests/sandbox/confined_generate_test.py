#!/usr/bin/env python3
"""`generate --mine` runs the student's decoder confined, as `check` runs a harness.

Usage: confined_generate_test.py WORKBOOK SOLUTION_DIR MODEL
  WORKBOOK      the built workbook
  SOLUTION_DIR  solutions/05-decoder (the attack is the solution plus a static constructor)
  MODEL         a GGUF model the decoder can run

The constructor tries what a program run with the caller's rights could do: read a file only
its owner may read (a hidden suite), read a secret from the environment (an instructor's token)
and write a file outside its tree. Each must fail, the text must still be generated, and no
byte of the secrets may reach any output. On a runner that executes the decoder directly (as
it once did) the constructor reads both secrets and writes the file.
"""
import os, shutil, subprocess, sys, tempfile

SECRET_FILE_TEXT = "hidden-suite-line-5b1e"
SECRET_ENV_TEXT = "instructor-token-9c3d"

ATTACK = r'''
#include <cstdio>
#include <cstdlib>
namespace {
struct ConfinementProbe {
  ConfinementProbe() {
    if (std::FILE* f = std::fopen("@SECRET@", "r")) {
      char line[128] = {};
      if (std::fgets(line, sizeof line, f)) std::fprintf(stderr, "probe: read the file: %s\n", line);
      std::fclose(f);
    } else {
      std::fprintf(stderr, "probe: cannot read the file\n");
    }
    const char* token = std::getenv("WB_CONFINED_TEST_TOKEN");
    std::fprintf(stderr, "probe: the token is %s\n", token ? token : "(unset)");
    if (std::FILE* f = std::fopen("@OUTSIDE@", "w")) {
      std::fputs("written\n", f);
      std::fclose(f);
      std::fprintf(stderr, "probe: wrote outside\n");
    } else {
      std::fprintf(stderr, "probe: cannot write outside\n");
    }
  }
} probe;
}  // namespace
'''


def main():
    workbook, solution_dir, model = sys.argv[1:4]
    failures = []

    def check(ok, what):
        print(("ok    " if ok else "FAIL  ") + what)
        if not ok:
            failures.append(what)

    with tempfile.TemporaryDirectory(prefix="wb-confined-") as work:
        os.chmod(work, 0o755)
        secret = os.path.join(work, "hidden.json")
        with open(secret, "w") as f:
            f.write(SECRET_FILE_TEXT + "\n")
        os.chmod(secret, 0o600)
        outside = os.path.join(work, "written-by-the-decoder")
        stage = os.path.join(work, "stages", "05-decoder")
        shutil.copytree(solution_dir, stage)
        decoder = os.path.join(stage, "decoder.cc")
        text = open(decoder).read()
        with open(decoder, "w") as f:
            f.write(text + ATTACK.replace("@SECRET@", secret).replace("@OUTSIDE@", outside))
        env = dict(os.environ, WB_CONFINED_TEST_TOKEN=SECRET_ENV_TEXT)
        p = subprocess.run([workbook, "generate", "--mine", "--stages", os.path.join(work, "stages"),
                            "--model", os.path.abspath(model), "--prompt", "In the beginning", "-n", "8",
                            "--seed", "1"], capture_output=True, text=True, env=env, timeout=900)
        both = p.stdout + p.stderr
        check(p.returncode == 0, f"generate --mine ran (exit {p.returncode}: {p.stderr.strip()[-400:]})")
        check(p.stdout.startswith("In the beginning") and len(p.stdout.split("\n")[0]) > len("In the beginning"),
              f"the text was generated ({p.stdout[:80]!r})")
        check("probe: cannot read the file" in both, "the decoder's constructor ran and could not read a root-only file")
        check("probe: the token is (unset)" in both, "the caller's environment did not reach the decoder")
        check("probe: cannot write outside" in both and not os.path.exists(outside),
              "the decoder could not write outside its tree")
        check(SECRET_FILE_TEXT not in both and SECRET_ENV_TEXT not in both, "no secret reached any output")

    if failures:
        print(f"{len(failures)} failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
