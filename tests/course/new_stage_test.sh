#!/bin/sh
# Adding a stage is one row of data/stages.json and one folder in each tree: this test copies
# the workbook, adds a stage 99 that is stage 1 renamed, touching nothing else, builds it and
# checks it end to end (the solution passes, the starter is not implemented, list and hint
# know it).
#   new_stage_test.sh SOURCE_ROOT
set -eu
src=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM

# The tree as it is, without build folders: what git tracks plus what it does not ignore.
if git -C "$src" rev-parse --show-toplevel >/dev/null 2>&1; then
  (cd "$src" && git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$work")
else
  (cd "$src" && tar --exclude='./build*' --exclude='./site' -cf - .) | (cd "$work" && tar -xf -)
fi
cd "$work"

# The folders: stage 1's, renamed. The driver's namespace is the folder's number.
cp -r stages/01-block stages/99-copy
cp -r solutions/01-block solutions/99-copy
cp -r runner/stages/01-block runner/stages/99-copy
sed -i 's/wb::stage01/wb::stage99/g; s/stage01::/stage99::/g; s/01-block decoder_block/99-copy decoder_block/' \
  runner/stages/99-copy/*
mkdir data/stage99
for suite in visible hidden-example; do
  sed 's/"stage": 1,/"stage": 99,/' "data/stage01/$suite.json" > "data/stage99/$suite.json"
done
cp docs/stages/01-block.md docs/stages/99-copy.md
mkdir tests/planted/stage99
cp tests/planted/stage01/rope-adjacent-pairs.bug tests/planted/stage99/

# The row: stage 1's, renamed, after the last stage.
python3 - <<'PY'
import copy, json
path = "data/stages.json"
table = json.load(open(path))
row = copy.deepcopy(table["stages"][0])
row.update(number=99, dir="99-copy", title="A copy of stage 1", lesson="docs/stages/99-copy.md",
           visible="data/stage99/visible.json", hidden_example="data/stage99/hidden-example.json",
           planted="tests/planted/stage99")
table["stages"].append(row)
json.dump(table, open(path, "w"), indent=2)
PY

# Without optimization: what this test proves is the layout, and the copy builds in about three
# quarters of the time (runner-ready 60 s against 82 s on two quiet cores).
meson setup build -Doptimization=0 >setup.log 2>&1 || { cat setup.log; exit 1; }
# What the commands below use: the runner, every stage's harness and prelude (list compiles each
# starter), stage 99's solution and the block's weights; not the other stages' solutions and
# benches, which runner-ready adds and which are a quarter of its compile time.
targets="workbook block-weights.wbk stage99-solution stage04-q8_0.gguf stage04-q4_0.gguf stage04-mixed.gguf"
for n in 01 02 03 04 99; do targets="$targets libharness_stage$n.a student_prelude_stage$n.h.gch"; done
ninja -C build -j2 $targets >build.log 2>&1 || { tail -50 build.log; exit 1; }

fail() { echo "new_stage_test: $*" >&2; exit 1; }
out=$(build/workbook check 99 --solutions) || fail "check 99 --solutions did not pass: $out"
echo "$out" | grep -q "Stage 99 is done" || fail "check 99 --solutions: $out"
status=0
out=$(build/workbook check 99) || status=$?
[ "$status" -eq 1 ] || fail "check 99 of the starter exited $status, not 1: $out"
echo "$out" | grep -q "norm1 is not implemented yet" || fail "check 99 of the starter: $out"
build/workbook list | grep -q "99  A copy of stage 1 .* not started" || fail "list: $(build/workbook list)"
WORKBOOK_HINT_STATE="$work/hints.json" build/workbook hint 99 | grep -q "Hints for norm1 (stage 99), 1 of" ||
  fail "hint 99: $(WORKBOOK_HINT_STATE="$work/hints.json" build/workbook hint 99)"
echo "stage 99, added as one row and its folders, builds and checks"
