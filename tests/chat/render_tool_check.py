#!/usr/bin/env python3
"""render-chat-template renders a template file with a variables file, byte for byte, and
fails with exit 2 and the interpreter's message (line and construct) when it cannot.
Usage: render_tool_check.py RENDER_CHAT_TEMPLATE"""

import json
import os
import subprocess
import sys
import tempfile


def main():
    tool = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        def render(template, variables):
            template_path = os.path.join(tmp, "t.jinja")
            variables_path = os.path.join(tmp, "v.json")
            open(template_path, "w", encoding="utf-8").write(template)
            json.dump(variables, open(variables_path, "w", encoding="utf-8"))
            return subprocess.run([tool, template_path, variables_path], capture_output=True, timeout=30)

        out = render("{{ bos_token }}{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}",
                     {"bos_token": "<s>", "messages": [{"role": "user", "content": "caf\u00e9 \u00a0"}]})
        if out.returncode != 0 or out.stdout != "<s>user: caf\u00e9 \u00a0\n".encode():
            failures.append(f"render: exit {out.returncode}, stdout {out.stdout!r}, stderr {out.stderr!r}")
        out = render("ok\n{{ x | wordwrap }}", {"x": "a"})
        expected = b"error: line 2: the filter 'wordwrap' is not supported by the workbook's Jinja interpreter\n"
        if out.returncode != 2 or out.stderr != expected:
            failures.append(f"refusal: exit {out.returncode}, stderr {out.stderr!r}")
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
