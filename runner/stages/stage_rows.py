#!/usr/bin/env python3
"""Prints the available stages of data/stages.json for meson, one line per stage:

    number;dir;file;flag,flag;planted folder;planted timeout;bug,bug;visible;hidden example

meson cannot read JSON, and this is the only place the build learns which stages exist
(meson.build loops over these lines). The planted bugs are the folder's *.bug files, sorted.
Any error in the table stops the configuration with a message naming the field.
"""
import json
import os
import sys


def main(root: str) -> int:
    path = os.path.join(root, "data", "stages.json")
    try:
        with open(path, encoding="utf-8") as f:
            table = json.load(f)
    except (OSError, ValueError) as e:
        print(f"{path}: cannot read the stage table: {e}", file=sys.stderr)
        return 1
    for i, row in enumerate(table.get("stages", [])):
        if not row.get("available"):
            continue
        try:
            number, folder, file = int(row["number"]), row["dir"], row["file"]
            flags = row.get("compile_flags", [])
            planted = row["planted"]
            timeout = int(row.get("planted_timeout", 120))
            suites = [row["visible"], row["hidden_example"]]
        except (KeyError, TypeError, ValueError) as e:
            print(f"{path}: stages[{i}] lacks or mistypes a field the build needs: {e}", file=sys.stderr)
            return 1
        if not folder.startswith(f"{number:02d}-"):
            print(f"{path}: stages[{i}].dir is '{folder}'; it must start with the two-digit number "
                  f"'{number:02d}-'", file=sys.stderr)
            return 1
        bugs = sorted(name[:-4] for name in os.listdir(os.path.join(root, planted)) if name.endswith(".bug"))
        for value in [folder, file, planted, *flags, *bugs, *suites]:
            if ";" in value or "," in value:
                print(f"{path}: stages[{i}]: '{value}' may not contain ';' or ','", file=sys.stderr)
                return 1
        print(";".join([str(number), folder, file, ",".join(flags), planted, str(timeout), ",".join(bugs), *suites]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
