#!/usr/bin/env python3
"""`workbook convert` on three tokenizers of this test's own making, round-tripped through
`inspect` and `generate`:

  spm     SentencePiece-style BPE with byte fallback (the form of Llama 2, Mistral, Gemma):
          Prepend + Replace normalizers, a TemplateProcessing that adds <s>
  llama3  byte-level BPE with Llama 3's Split pattern, ignore_merges, and a post-processor
          Sequence of ByteLevel and a TemplateProcessing that adds <|begin_of_text|>
  qwen2   byte-level BPE with Qwen2's Split pattern, an NFC normalizer, no BOS

Each tokenizer goes into a copy of the workbook's own model's Hugging Face folder (its
config.json and weights: 2048 token rows, more than any of these vocabularies holds) and is
converted to GGUF. Then `inspect --format json` must describe the same tokenizer in both forms
(the GGUF has no NFC: GGUF has no normalizer key) and `generate --temperature 0` must encode the
prompt to the same, exactly expected ids in both forms and continue it with the same ids.

    convert_roundtrip_test.py WORKBOOK_EXE SOURCE_ROOT
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile


def byte_to_unicode():
    """GPT-2's reversible byte -> printable character table (bytes_to_unicode in encoder.py)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def merges_for(words, first_symbols):
    """Left-to-right merges that build each word from its symbols, in order of first need."""
    merges, made = [], set(first_symbols)
    for word in words:
        current = word[0]
        for ch in word[1:]:
            if current + ch not in made:
                merges.append([current, ch])
                made.add(current + ch)
            current += ch
    return merges


def spm_tokenizer():
    tokens = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)]
    chars = ["▁"] + list("abcdefghijklmnopqrstuvwxyzGI,.")
    tokens += chars
    merges = merges_for(["▁the", "▁beginning", "▁in", "▁In", "▁God", "▁created", "▁heaven", "▁earth", "▁and"],
                        chars)
    tokens += [a + b for a, b in merges]
    tokens.append("<|user|>")
    vocab = {t: i for i, t in enumerate(tokens) if t != "<|user|>"}
    added = [{"id": i, "content": t, "special": True, "normalized": False, "lstrip": False, "rstrip": False,
              "single_word": False} for i, t in enumerate(tokens) if t in ("<unk>", "<s>", "</s>", "<|user|>")]
    return {
        "version": "1.0", "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
                                                           {"type": "Replace", "pattern": {"String": " "},
                                                            "content": "▁"}]},
        "pre_tokenizer": None,
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "Fuse"}]},
        "model": {"type": "BPE", "vocab": vocab, "merges": merges, "byte_fallback": True, "unk_token": "<unk>",
                  "fuse_unk": True},
    }, {"bos_token": "<s>", "eos_token": "</s>", "add_bos_token": True, "add_eos_token": False,
        "chat_template": "{% for m in messages %}<|user|>{{ m['content'] }}{% endfor %}"}


LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                r"\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
               r"\s*[\r\n]+|\s+(?!\S)|\s+")


def byte_level_tokenizer(split, specials, bos, normalizer, ignore_merges):
    table = byte_to_unicode()
    tokens = [table[b] for b in range(256)]
    words = ["Ġthe", "Ġbeginning", "In", "ĠGod", "Ġcreated", "Ġheaven", "Ġand", "Ġearth", "123", "Ġé"]
    words = ["".join(table[b] for b in w.replace("Ġ", " ").encode()) for w in words]
    merges = merges_for(words, tokens)
    tokens += [a + b for a, b in merges]
    vocab = {t: i for i, t in enumerate(tokens)}
    added = [{"id": len(tokens) + i, "content": s, "special": True, "normalized": False, "lstrip": False,
              "rstrip": False, "single_word": False} for i, s in enumerate(specials)]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    post = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True}
    if bos:
        bos_id = len(tokens) + specials.index(bos)
        post = {"type": "Sequence", "processors": [post, {
            "type": "TemplateProcessing", "single": [{"SpecialToken": {"id": bos, "type_id": 0}},
                                                     {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [], "special_tokens": {bos: {"id": bos, "ids": [bos_id], "tokens": [bos]}}}]}
    return {
        "version": "1.0", "added_tokens": added, "normalizer": normalizer,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": split}, "behavior": "Isolated", "invert": False}, byte_level]},
        "post_processor": post, "decoder": byte_level,
        "model": {"type": "BPE", "vocab": vocab, "merges": merges, "ignore_merges": ignore_merges,
                  "byte_fallback": False, "dropout": None, "unk_token": None},
    }


def run(args):
    return subprocess.run(args, capture_output=True, text=True, timeout=300)


def main():
    workbook, root = sys.argv[1], sys.argv[2]
    model_hf = os.path.join(root, "data", "models", "kjv-llama-2m", "hf")
    prompt = "In the beginning God created the heaven and the earth. 123 Café"
    llama3 = byte_level_tokenizer(LLAMA3_SPLIT, ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"],
                                  "<|begin_of_text|>", None, True)
    qwen2 = byte_level_tokenizer(QWEN2_SPLIT, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], None,
                                 {"type": "NFC"}, False)
    spm, spm_config = spm_tokenizer()
    # The prompt's ids, worked out by hand from the merges above (and checked with llama.cpp's
    # llama-tokenize on the converted files).
    cases = {
        # <s>, ▁In ▁the ▁beginning ▁God ▁created ▁the ▁heaven ▁and ▁the ▁earth . ▁, then "123" and the
        # "é" of "Café" as byte tokens (<0x31> is 3 + 0x31), C (byte fallback too) a f.
        "spm": (spm, spm_config, "sentencepiece", "", 1, True,
                [1, 305, 292, 301, 308, 315, 292, 321, 329, 292, 326, 289, 259, 52, 53, 54, 259, 70, 260, 265, 198,
                 172]),
        # <|begin_of_text|>, In, Ġthe, Ġbeginning, ..., then ". " "123" (a merge) " " "C" "a" "f" and é's two
        # bytes (a byte's token id is the byte here).
        "llama3": (llama3, {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}, "byte-level-bpe", "llama3",
                   None, True, [297, 268, 258, 267, 271, 278, 258, 284, 287, 258, 292, 46, 32, 294, 32, 67, 97, 102,
                                195, 169]),
        # No BOS, and Qwen2's split takes digits one at a time: "1" "2" "3".
        "qwen2": (qwen2, {"bos_token": None, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
                  "byte-level-bpe", "qwen2", None, False,
                  [268, 258, 267, 271, 278, 258, 284, 287, 258, 292, 46, 32, 49, 50, 51, 32, 67, 97, 102, 195, 169]),
    }
    failures = []
    with tempfile.TemporaryDirectory() as temp:
        for name, (tokenizer, config, kind, pre, bos, adds_bos, expected) in cases.items():
            folder = os.path.join(temp, name)
            os.makedirs(folder)
            for f in ("config.json", "model.safetensors"):
                shutil.copy(os.path.join(model_hf, f), folder)
            with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
                json.dump(tokenizer, f, ensure_ascii=False)
            with open(os.path.join(folder, "tokenizer_config.json"), "w", encoding="utf-8") as f:
                json.dump(config, f, ensure_ascii=False)
            gguf = os.path.join(temp, name + ".gguf")
            out = run([workbook, "convert", folder, "--type", "f16", "-o", gguf])
            if out.returncode != 0:
                failures.append(f"{name}: convert exit {out.returncode}: {out.stderr.strip()}")
                continue
            if name == "qwen2" and "NFC normalizer has no GGUF key" not in out.stderr:
                failures.append(f"{name}: convert did not note the NFC normalizer: {out.stderr.strip()!r}")

            described = {}
            for form, path in (("hf", folder), ("gguf", gguf)):
                out = run([workbook, "inspect", "--format", "json", path])
                if out.returncode != 0:
                    failures.append(f"{name}: inspect {form} exit {out.returncode}: {out.stderr.strip()}")
                    continue
                described[form] = json.loads(out.stdout)["tokenizer"]
            if len(described) == 2:
                hf, gg = described["hf"], described["gguf"]
                want = {"ok": True, "kind": kind, "pre_tokenizer": pre, "adds_bos": adds_bos, "adds_eos": False}
                for key, value in want.items():
                    if hf.get(key) != value:
                        failures.append(f"{name}: inspect of the folder says {key} {hf.get(key)!r}, not {value!r}")
                if name == "spm" and hf.get("bos") != bos:
                    failures.append(f"{name}: BOS {hf.get('bos')}, not {bos}")
                if hf.get("normalizers") != ("NFC" if name == "qwen2" else ""):
                    failures.append(f"{name}: normalizers {hf.get('normalizers')!r}")
                for key in hf:
                    if key != "normalizers" and hf[key] != gg.get(key):
                        failures.append(f"{name}: inspect's {key} is {hf[key]!r} for the folder, {gg.get(key)!r} "
                                        "for the GGUF")

            generated = {}
            for form, path in (("hf", folder), ("gguf", gguf)):
                out = run([workbook, "generate", "--model", path, "--prompt", prompt, "-n", "4", "--temperature", "0",
                           "--format", "json"])
                if out.returncode != 0:
                    failures.append(f"{name}: generate {form} exit {out.returncode}: {out.stderr.strip()[-400:]}")
                    continue
                result = json.loads(out.stdout)
                generated[form] = (result["prompt_tokens"], result["tokens"])
            if len(generated) == 2:
                if generated["hf"] != generated["gguf"]:
                    failures.append(f"{name}: the folder gives ids {generated['hf']}, the GGUF {generated['gguf']}")
                if expected is not None and generated["hf"][0] != expected:
                    failures.append(f"{name}: the prompt is {generated['hf'][0]}, not {expected}")
            print(f"{name}: prompt ids {generated.get('hf', ([], []))[0]}")

    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
