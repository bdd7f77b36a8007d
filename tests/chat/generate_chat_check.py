#!/usr/bin/env python3
"""`generate --chat` renders the model's own chat template, end to end.

The workbook's model (data/models/kjv-llama-2m) has no chat template, so this test copies its
Hugging Face folder (4 MB) to temporary ones whose
tokenizer_config.json carries a template written for this test, and runs the generate
program on it:
  - --show-prompt prints exactly the text the template writes for --system and --prompt
    (-n 0: the prompt only), and json output carries it as "chat_prompt";
  - the BOS rule: a template that writes bos_token gives one BOS, not two; one that writes
    none gets the tokenizer's BOS (its add_bos_token is true);
  - --messages FILE.json: a multi-turn conversation, --prompt appended as the next user turn;
    a bad file is refused naming the file and what is wrong;
  - a template the interpreter refuses names its line and the construct; a model without a
    template is refused naming the file;
  - through the `workbook generate` front end too, which must let the confined program read
    the messages file.
The temporary folders are made in WORK_DIR (the build folder), readable by all: the confined
program that `workbook generate` runs has a /tmp of its own and may run as another user.
Usage: generate_chat_check.py SOURCE_ROOT GENERATE_PROGRAM WORKBOOK_EXE WORK_DIR
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

TEMPLATE_WITH_BOS = (
    "{{ bos_token }}{% for m in messages %}\n"
    "{{ m.role | upper }}: {{ m.content | trim }}\n"
    "{% endfor %}\n"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)
TEMPLATE_WITHOUT_BOS = "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}[assistant]"
TEMPLATE_UNSUPPORTED = "{% for m in messages %}\n{{ m.content | wordwrap(10) }}\n{% endfor %}"


def run(args):
    return subprocess.run(args, capture_output=True, text=True, timeout=300)


def make_folder(root, parent, template):
    source = os.path.join(root, "data", "models", "kjv-llama-2m", "hf")
    folder = tempfile.mkdtemp(dir=parent)
    os.chmod(folder, 0o755)  # readable by the unprivileged user the confined program may run as
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        shutil.copyfile(os.path.join(source, name), os.path.join(folder, name))
    config = json.load(open(os.path.join(source, "tokenizer_config.json")))
    if template is not None:
        config["chat_template"] = template
    json.dump(config, open(os.path.join(folder, "tokenizer_config.json"), "w"))
    return folder


def main():
    root, program, workbook, work = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    failures = []

    def expect(condition, what):
        if not condition:
            failures.append(what)

    tokenizer = json.load(open(os.path.join(root, "data", "models", "kjv-llama-2m", "hf", "tokenizer.json")))
    bos = next(t["id"] for t in tokenizer["added_tokens"] if t["content"] == "<|endoftext|>")

    with tempfile.TemporaryDirectory(dir=work) as tmp:
        os.chmod(tmp, 0o755)
        with_bos = make_folder(root, tmp, TEMPLATE_WITH_BOS)
        without_bos = make_folder(root, tmp, TEMPLATE_WITHOUT_BOS)
        unsupported = make_folder(root, tmp, TEMPLATE_UNSUPPORTED)
        chat = ["--chat", "-n", "0", "--threads", "1"]

        # --show-prompt: the template's text, exactly.
        out = run([program, "--model", with_bos, *chat, "--show-prompt", "--system", "Be short.", "--prompt", " Hello\u00a0"])
        expected = "<|endoftext|>SYSTEM: Be short.\nUSER: Hello\nASSISTANT:"
        expect(out.returncode == 0, f"--show-prompt: exit {out.returncode}: {out.stderr}")
        expect(out.stdout == expected + "\n", f"--show-prompt printed {out.stdout!r}, expected {expected!r} and a newline")

        # json: the prompt text, and one BOS where the template writes it.
        out = run([program, "--model", with_bos, *chat, "--format", "json", "--prompt", "Hello"])
        expect(out.returncode == 0, f"json: exit {out.returncode}: {out.stderr}")
        if out.returncode == 0:
            made = json.loads(out.stdout)
            expect(made["chat_prompt"] == "<|endoftext|>USER: Hello\nASSISTANT:", f"chat_prompt is {made['chat_prompt']!r}")
            expect(made["prompt_tokens"][0] == bos and made["prompt_tokens"][1] != bos,
                   f"a template writing BOS: prompt tokens {made['prompt_tokens'][:3]}..., expected one BOS ({bos})")

        # A template that writes no BOS: the tokenizer's BOS (add_bos_token is true) in front.
        out = run([program, "--model", without_bos, *chat, "--format", "json", "--prompt", "Hello"])
        expect(out.returncode == 0, f"no-BOS template: exit {out.returncode}: {out.stderr}")
        if out.returncode == 0:
            made = json.loads(out.stdout)
            expect(made["chat_prompt"] == "[user] Hello\n[assistant]", f"chat_prompt is {made['chat_prompt']!r}")
            expect(made["prompt_tokens"][0] == bos and made["prompt_tokens"][1] != bos,
                   f"a template writing no BOS: prompt tokens {made['prompt_tokens'][:3]}..., expected the tokenizer's BOS")

        # --messages: the file's turns, then --prompt; without --prompt, the file alone.
        messages = os.path.join(tmp, "conversation.json")
        json.dump([{"role": "system", "content": "Be short."}, {"role": "user", "content": "Hi"},
                   {"role": "assistant", "content": "Hello"}], open(messages, "w"))
        out = run([program, "--model", with_bos, *chat, "--show-prompt", "--messages", messages, "--prompt", "Bye"])
        expected = "<|endoftext|>SYSTEM: Be short.\nUSER: Hi\nASSISTANT: Hello\nUSER: Bye\nASSISTANT:"
        expect(out.stdout == expected + "\n", f"--messages with --prompt printed {out.stdout!r}, expected {expected!r}")
        out = run([program, "--model", with_bos, *chat, "--show-prompt", "--messages", messages])
        expected = "<|endoftext|>SYSTEM: Be short.\nUSER: Hi\nASSISTANT: Hello\nASSISTANT:"
        expect(out.stdout == expected + "\n", f"--messages alone printed {out.stdout!r}, expected {expected!r}")

        # Bad messages files: exit 2, naming the file and what is wrong.
        bad_files = {
            "not-json.json": ("[{", "not JSON"),
            "object.json": ('{"role": "user"}', "must be a JSON list"),
            "no-role.json": ('[{"role": "user", "content": "a"}, {"content": "b"}]', "message 2 has no \"role\" string"),
            "number.json": ('[{"role": "user", "content": 5}]', "\"content\" must be a string"),
        }
        for name, (text, complaint) in bad_files.items():
            path = os.path.join(tmp, name)
            open(path, "w").write(text)
            out = run([program, "--model", with_bos, *chat, "--messages", path])
            expect(out.returncode == 2 and path in out.stderr and complaint in out.stderr,
                   f"{name}: exit {out.returncode}, stderr {out.stderr.strip()!r}; expected 2 naming the file and {complaint!r}")
        out = run([program, "--model", with_bos, "-n", "0", "--messages", messages])
        expect(out.returncode == 2 and "--messages is for --chat" in out.stderr, f"--messages without --chat: {out.stderr!r}")

        # The interpreter refuses what it does not run, naming the line and the construct.
        out = run([program, "--model", unsupported, *chat, "--prompt", "Hello"])
        expect(out.returncode == 2 and "line 2: the filter 'wordwrap' is not supported" in out.stderr and unsupported in out.stderr,
               f"unsupported construct: exit {out.returncode}, stderr {out.stderr.strip()!r}")

        # No template: refused, naming the file.
        gguf = os.path.join(root, "data", "models", "kjv-llama-2m", "model-f16.gguf")
        out = run([program, "--model", gguf, *chat, "--prompt", "Hello"])
        expect(out.returncode == 2 and "has no chat template" in out.stderr and gguf in out.stderr,
               f"no template: exit {out.returncode}, stderr {out.stderr.strip()!r}")

        # Through the front end, whose confined program reads the messages file.
        out = run([workbook, "generate", "--model", with_bos, *chat, "--show-prompt", "--messages", messages, "--prompt", "Bye"])
        expected = "<|endoftext|>SYSTEM: Be short.\nUSER: Hi\nASSISTANT: Hello\nUSER: Bye\nASSISTANT:"
        expect(out.returncode == 0 and out.stdout == expected + "\n",
               f"workbook generate --messages: exit {out.returncode}, stdout {out.stdout!r}, stderr {out.stderr.strip()!r}")

    for failure in failures:
        print("FAIL:", failure)
    print(f"generate --chat: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
