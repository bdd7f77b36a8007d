#!/usr/bin/python3
"""Prints goldens.json for the workbook's own model: for each prompt and each of its files,
the float64 reference's greedy continuation (`./workbook reference --prompt P --greedy N`,
with the f16 cache that `workbook generate` uses by default) and each step's margin between
the two largest logits. Run from the repository root: python3 training/make_goldens.py FOLDER
"""

import json
import subprocess
import sys

PROMPTS = ["In the beginning", "And God said", "The LORD is my shepherd", "Blessed are the"]
FILES = ["hf", "model-f16.gguf", "model-q8_0.gguf", "model-q4_0.gguf"]
GREEDY = 32


def main():
    folder = sys.argv[1]
    cases = []
    for prompt in PROMPTS:
        files = {}
        for name in FILES:
            out = subprocess.run(["./workbook", "reference", "--model", f"{folder}/{name}", "--prompt", prompt,
                                  "--greedy", str(GREEDY), "--cache", "f16"],
                                 check=True, capture_output=True, text=True).stdout
            r = json.loads(out)
            files[name] = {"prompt_tokens": r["prompt_tokens"], "tokens": r["tokens"],
                           "margins": [round(m, 6) for m in r["margins"]], "text": r["text"]}
        cases.append({"prompt": prompt, "files": files})
    print(json.dumps({"name": "kjv-llama-2m", "cache": "f16", "greedy": GREEDY, "cases": cases}, indent=1))


if __name__ == "__main__":
    main()
