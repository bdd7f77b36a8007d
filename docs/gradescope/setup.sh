#!/bin/sh
# Gradescope autograder setup: runs once, when the autograder image is built. The zip that
# make_autograder writes holds this file, run_autograder, autograder.json (the stages to
# grade), their hidden suites and workbook/ (the workbook's tree, without its history);
# Gradescope unpacks it into $AUTOGRADER/source (AUTOGRADER: /autograder unless set).
set -eu
AUTOGRADER=${AUTOGRADER:-/autograder}
cd "$AUTOGRADER/source/workbook"
./workbook deps   # installs meson, ninja, g++ and the -dev packages (as root)
# Builds the runner and what each graded stage needs (stage 5's runner too), so that grading
# compiles only the student's files.
# shellcheck disable=SC2046  # one stage number a word
./workbook build $(python3 -c 'import json, sys; print(" ".join(str(s["stage"]) for s in json.load(open(sys.argv[1]))["stages"]))' "$AUTOGRADER/source/autograder.json")
