#!/bin/sh
# Gradescope autograder setup (runs once, when the autograder image is built).
# The autograder zip holds this file, run_autograder, hidden.json and workbook/ (a copy of
# this repository); Gradescope unpacks it into /autograder/source.
set -eu
cd /autograder/source/workbook
./workbook deps                 # installs meson, ninja, g++ and the -dev packages (as root)
./workbook help >/dev/null      # configures and builds the workbook once, so grading is fast
