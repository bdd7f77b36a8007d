#!/bin/sh
# The docs site as a test: `mkdocs build --strict` of SOURCE_ROOT/mkdocs.yml into SITE_DIR
# (a folder of the build tree). A broken link, a page left out of the nav or a missing
# package fails it.
#
#   build_site.sh SOURCE_ROOT SITE_DIR
set -eu
if [ $# -ne 2 ]; then
  echo "usage: build_site.sh SOURCE_ROOT SITE_DIR" >&2
  exit 2
fi
if ! command -v mkdocs >/dev/null 2>&1; then
  echo "docs site: mkdocs is not installed. Run ./workbook deps (it installs mkdocs," >&2
  echo "mkdocs-material, python3-pymdownx and libjs-katex), then run the tests again." >&2
  exit 1
fi
# The hook (mkdocs_hooks.py) is imported from the source tree: leave no __pycache__ there.
export PYTHONDONTWRITEBYTECODE=1
if ! mkdocs build --strict --config-file "$1/mkdocs.yml" --site-dir "$2"; then
  echo "docs site: mkdocs build --strict failed (its messages are above). A missing theme," >&2
  echo "extension or KaTeX means a package is missing: run ./workbook deps." >&2
  exit 1
fi
