"""MkDocs hook (mkdocs.yml: hooks): typeset math with the KaTeX that Debian installs.

The lessons write formulas as $...$ and $$...$$ (pymdownx.arithmatex, generic mode), which
GitHub renders as they stand. On the site, KaTeX renders them in the browser. The repository
holds no copy of KaTeX: at build time this hook adds the files of Debian's libjs-katex and
fonts-katex (/usr/share/javascript/katex) to the site, under katex/, so the built site is
self-contained and loads nothing from the network. mkdocs.yml's extra_javascript and
extra_css point at those copies.
"""

import os

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

KATEX_ROOT = "/usr/share/javascript"  # libjs-katex installs katex/ here
KATEX_FILES = ["katex/katex.min.js", "katex/katex.min.css", "katex/contrib/auto-render.js"]
KATEX_FONTS = "katex/fonts"  # a link to fonts-katex's folder; katex.min.css loads fonts/*


def _katex_paths():
    missing = [p for p in KATEX_FILES + [KATEX_FONTS] if not os.path.exists(os.path.join(KATEX_ROOT, p))]
    if missing:
        raise PluginError(
            "KaTeX is not installed (no {} under {}): run ./workbook deps, which installs "
            "libjs-katex and fonts-katex".format(", ".join(missing), KATEX_ROOT))
    fonts = sorted(os.listdir(os.path.join(KATEX_ROOT, KATEX_FONTS)))
    return KATEX_FILES + [KATEX_FONTS + "/" + name for name in fonts]


def on_files(files, config):
    """Adds Debian's KaTeX files to the site, each copied to katex/ in the site folder."""
    for path in _katex_paths():
        files.append(File(path, KATEX_ROOT, config["site_dir"], config["use_directory_urls"]))
    return files
