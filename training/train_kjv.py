#!/usr/bin/python3
"""Trains the workbook's own model: a 2-million-parameter llama on the King James Bible.

The workbook ends with a student's decoder writing text, and nothing may be downloaded, so
the model is trained here, on CPU, from a public-domain text that a Debian package ships:
the King James Version in `bible-kjv-text`, printed by `bible -f "Gen1:1-Rev22:21"`
(package `bible-kjv`). This script is not part of the build or the tests; its result is
committed in data/models/kjv-llama-2m/ (see the model card there).

    apt-get install python3-torch bible-kjv      # Debian's torch, CPU only
    /usr/bin/python3 training/train_kjv.py --out data/models/kjv-llama-2m --threads 2

Steps, all deterministic for a given --seed and thread count:
  1. corpus: every verse's text (the reference "Ge1:1" dropped), the verses of a chapter
     joined by newlines, each chapter one document that starts with <|endoftext|>;
  2. tokenizer: byte-level BPE (Sennrich et al. 2016, "Neural Machine Translation of Rare
     Words with Subword Units"; bytes as symbols as GPT-2 does, Radford et al. 2019) with
     GPT-2's pre-tokenizer split, learned on this corpus: 256 byte tokens, 1791 merges and
     <|endoftext|>, 2048 in all;
  3. model: the Llama architecture as Hugging Face's LlamaForCausalLM computes it (RMSNorm,
     rotary embeddings with the half-split pairing, grouped-query attention, SwiGLU), 4
     layers, hidden 192, 6 query heads and 2 key/value heads of 32, FFN 512, tied embedding;
  4. training: AdamW, linear warm-up then cosine decay, next-token cross-entropy on random
     256-token windows; every 20th window of the token stream is held out for validation;
  5. export: config.json, model.safetensors (float16), tokenizer.json, tokenizer_config.json
     and generation_config.json in Hugging Face's layout, and training_log.json (the loss
     curve and the settings). The GGUF files are written from this folder by the workbook's
     own converter (`./workbook convert`), not here.
"""

import argparse
import json
import math
import os
import random
import re
import struct
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

END_OF_TEXT = "<|endoftext|>"
VOCAB_SIZE = 2048  # 256 bytes + 1791 merges + <|endoftext|>

# GPT-2's pre-tokenizer (openai/gpt-2, src/encoder.py):
#   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
# The corpus is ASCII (checked below), where \p{L} is [A-Za-z] and \p{N} is [0-9], so
# Python's re (which has no \p classes) gives exactly the same split on it.
GPT2_SPLIT_ASCII = re.compile(
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+""")


def bytes_to_unicode():
    """GPT-2's byte-to-character table (openai/gpt-2, src/encoder.py): printable bytes stand
    for themselves, the other 68 are moved to U+0100 onward, so every byte is a visible
    character in the vocabulary and merges file."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    table = {}
    shifted = 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + shifted)
            shifted += 1
    return table


def read_corpus():
    """The chapters of the KJV as documents, in canonical order."""
    out = subprocess.run(["bible", "-f", "Gen1:1-Rev22:21"], check=True, capture_output=True).stdout
    text = out.decode("ascii")  # fails loudly if the package ever ships non-ASCII text
    chapters = []
    current_key = None
    verse_line = re.compile(r"^([0-9]?[A-Za-z]+)(\d+):(\d+) (.*)$")
    for line in text.splitlines():
        m = verse_line.match(line)
        if not m:
            raise SystemExit(f"unexpected line in the bible output: {line[:60]!r}")
        key = (m.group(1), m.group(2))
        if key != current_key:
            chapters.append([])
            current_key = key
        chapters[-1].append(m.group(4).strip())
    return ["\n".join(verses) + "\n" for verses in chapters]


def learn_bpe(documents, merge_count):
    """Byte-level BPE: start from bytes, repeatedly merge the most frequent adjacent pair
    within pre-tokenized words (ties: the pair that sorts first, so the result is
    deterministic). Returns the merges in order, each a pair of token strings."""
    byte_char = bytes_to_unicode()
    word_counts = {}
    for doc in documents:
        for piece in GPT2_SPLIT_ASCII.findall(doc):
            word = tuple(byte_char[b] for b in piece.encode("utf-8"))
            word_counts[word] = word_counts.get(word, 0) + 1
    words = [list(w) for w in word_counts]
    counts = list(word_counts.values())
    merges = []
    for _ in range(merge_count):
        pair_counts = {}
        for symbols, count in zip(words, counts):
            for a, b in zip(symbols, symbols[1:]):
                pair_counts[(a, b)] = pair_counts.get((a, b), 0) + count
        if not pair_counts:
            break
        best = min(pair_counts.items(), key=lambda item: (-item[1], item[0]))[0]
        merges.append(best)
        joined = best[0] + best[1]
        for i, symbols in enumerate(words):
            if len(symbols) < 2:
                continue
            j = 0
            merged = []
            while j < len(symbols):
                if j + 1 < len(symbols) and symbols[j] == best[0] and symbols[j + 1] == best[1]:
                    merged.append(joined)
                    j += 2
                else:
                    merged.append(symbols[j])
                    j += 1
            words[i] = merged
    return merges


class ByteLevelBpe:
    """Encodes text with the learned merges, lowest rank first (GPT-2's bpe())."""

    def __init__(self, merges):
        self.byte_char = bytes_to_unicode()
        self.vocab = {self.byte_char[b]: b for b in range(256)}
        for a, b in merges:
            self.vocab[a + b] = len(self.vocab)
        self.vocab[END_OF_TEXT] = len(self.vocab)
        self.ranks = {pair: r for r, pair in enumerate(merges)}
        self.cache = {}

    def encode_piece(self, piece):
        if piece in self.cache:
            return self.cache[piece]
        symbols = [self.byte_char[b] for b in piece.encode("utf-8")]
        while len(symbols) > 1:
            ranked = [(self.ranks.get((a, b), math.inf), i) for i, (a, b) in enumerate(zip(symbols, symbols[1:]))]
            rank, i = min(ranked)
            if rank == math.inf:
                break
            symbols[i:i + 2] = [symbols[i] + symbols[i + 1]]
        ids = [self.vocab[s] for s in symbols]
        self.cache[piece] = ids
        return ids

    def encode(self, text):
        ids = []
        for piece in GPT2_SPLIT_ASCII.findall(text):
            ids.extend(self.encode_piece(piece))
        return ids


class RmsNorm(torch.nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Layer(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        hd = c["head_dim"]
        self.c = c
        self.input_layernorm = RmsNorm(c["hidden_size"], c["rms_norm_eps"])
        self.q_proj = torch.nn.Linear(c["hidden_size"], c["num_attention_heads"] * hd, bias=False)
        self.k_proj = torch.nn.Linear(c["hidden_size"], c["num_key_value_heads"] * hd, bias=False)
        self.v_proj = torch.nn.Linear(c["hidden_size"], c["num_key_value_heads"] * hd, bias=False)
        self.o_proj = torch.nn.Linear(c["num_attention_heads"] * hd, c["hidden_size"], bias=False)
        self.post_attention_layernorm = RmsNorm(c["hidden_size"], c["rms_norm_eps"])
        self.gate_proj = torch.nn.Linear(c["hidden_size"], c["intermediate_size"], bias=False)
        self.up_proj = torch.nn.Linear(c["hidden_size"], c["intermediate_size"], bias=False)
        self.down_proj = torch.nn.Linear(c["intermediate_size"], c["hidden_size"], bias=False)

    def forward(self, x, cos, sin, mask):
        c = self.c
        B, T, _ = x.shape
        hd = c["head_dim"]
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(B, T, c["num_attention_heads"], hd).transpose(1, 2)
        k = self.k_proj(h).view(B, T, c["num_key_value_heads"], hd).transpose(1, 2)
        v = self.v_proj(h).view(B, T, c["num_key_value_heads"], hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        group = c["num_attention_heads"] // c["num_key_value_heads"]
        # Each key/value head serves `group` consecutive query heads (GQA, Ainslie et al. 2023).
        k = k[:, :, None].expand(B, c["num_key_value_heads"], group, T, hd).reshape(B, -1, T, hd)
        v = v[:, :, None].expand(B, c["num_key_value_heads"], group, T, hd).reshape(B, -1, T, hd)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(hd) + mask
        attn = torch.softmax(scores, dim=-1) @ v
        x = x + self.o_proj(attn.transpose(1, 2).reshape(B, T, -1))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Llama(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed_tokens = torch.nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = torch.nn.ModuleList([Layer(c) for _ in range(c["num_hidden_layers"])])
        self.norm = RmsNorm(c["hidden_size"], c["rms_norm_eps"])
        hd = c["head_dim"]
        inv_freq = 1.0 / (c["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
        pos = torch.arange(c["max_position_embeddings"], dtype=torch.float64)
        angles = torch.outer(pos, inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", angles.cos().float(), persistent=False)
        self.register_buffer("sin", angles.sin().float(), persistent=False)

    def forward(self, ids):
        T = ids.shape[1]
        x = self.embed_tokens(ids)
        mask = torch.full((T, T), float("-inf")).triu(1)
        cos, sin = self.cos[:T], self.sin[:T]
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.norm(x) @ self.embed_tokens.weight.t()  # tied head


def hf_state_dict(model):
    """The weights under LlamaForCausalLM's names (tied: no lm_head.weight)."""
    out = {"model.embed_tokens.weight": model.embed_tokens.weight, "model.norm.weight": model.norm.weight}
    for i, layer in enumerate(model.layers):
        p = f"model.layers.{i}."
        out[p + "input_layernorm.weight"] = layer.input_layernorm.weight
        out[p + "post_attention_layernorm.weight"] = layer.post_attention_layernorm.weight
        for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            out[p + f"self_attn.{name}.weight"] = getattr(layer, name).weight
        for name in ("gate_proj", "up_proj", "down_proj"):
            out[p + f"mlp.{name}.weight"] = getattr(layer, name).weight
    return out


def write_safetensors(path, tensors):
    """safetensors (huggingface/safetensors, docs "format"): u64 header length, a JSON header
    of name -> dtype, shape, data_offsets, then the raw little-endian bytes."""
    header = {"__metadata__": {"format": "pt"}}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        data = tensors[name].detach().to(torch.float16).contiguous().numpy().tobytes()
        header[name] = {"dtype": "F16", "shape": list(tensors[name].shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # the format suggests 8-byte alignment of the data
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)
    os.replace(path + ".tmp", path)


def write_json(path, value):
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2, ensure_ascii=False)
        f.write("\n")
    os.replace(path + ".tmp", path)


def tokenizer_json(bpe, merges):
    """Hugging Face tokenizers' serialisation of a byte-level BPE (the tokenizers library's
    tokenizer.json: model BPE with vocab and merges, ByteLevel pre-tokenizer and decoder)."""
    eot_id = bpe.vocab[END_OF_TEXT]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": eot_id, "content": END_OF_TEXT, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": END_OF_TEXT, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": END_OF_TEXT, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {END_OF_TEXT: {"id": END_OF_TEXT, "ids": [eot_id], "tokens": [END_OF_TEXT]}},
        },
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "vocab": bpe.vocab, "merges": [a + " " + b for a, b in merges]},
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="the Hugging Face folder to write")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--context", type=int, default=256)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    started = time.time()

    documents = read_corpus()
    merges = learn_bpe(documents, VOCAB_SIZE - 256 - 1)
    bpe = ByteLevelBpe(merges)
    assert len(bpe.vocab) == VOCAB_SIZE, len(bpe.vocab)
    eot = bpe.vocab[END_OF_TEXT]
    stream = []
    for doc in documents:
        stream.append(eot)
        stream.extend(bpe.encode(doc))
    corpus_bytes = sum(len(d) for d in documents)
    print(f"corpus: {len(documents)} chapters, {corpus_bytes} bytes, {len(stream)} tokens "
          f"({corpus_bytes / len(stream):.2f} bytes per token); tokenizer learned in {time.time() - started:.0f} s",
          flush=True)

    ctx = args.context
    data = torch.tensor(stream, dtype=torch.long)
    windows = (len(stream) - 1) // ctx
    train_windows = [w for w in range(windows) if w % 20 != 19]
    val_windows = [w for w in range(windows) if w % 20 == 19]

    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": VOCAB_SIZE,
        "hidden_size": 192,
        "intermediate_size": 512,
        "num_hidden_layers": 4,
        "num_attention_heads": 6,
        "num_key_value_heads": 2,
        "head_dim": 32,
        "max_position_embeddings": 512,
        "rms_norm_eps": 1e-5,
        "hidden_act": "silu",
        "rope_theta": 10000.0,
        "tie_word_embeddings": True,
        "attention_bias": False,
        "bos_token_id": eot,
        "eos_token_id": eot,
        "torch_dtype": "float16",
    }
    model = Llama(config)
    # GPT-2-style initialisation: N(0, 0.02), output projections scaled by 1/sqrt(2 * layers).
    for name, p in model.named_parameters():
        if p.dim() == 2:
            std = 0.02 / math.sqrt(2 * config["num_hidden_layers"]) if name.endswith(("o_proj.weight", "down_proj.weight")) else 0.02
            torch.nn.init.normal_(p, 0.0, std)
    params = sum(p.numel() for p in model.parameters())
    print(f"model: {params} parameters", flush=True)

    decay = [p for p in model.parameters() if p.dim() == 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                                  lr=args.lr, betas=(0.9, 0.95))
    warmup = max(1, args.steps // 20)

    def learning_rate(step):
        if step < warmup:
            return args.lr * (step + 1) / warmup
        progress = (step - warmup) / max(1, args.steps - warmup)
        return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))

    def batch_of(window_ids):
        starts = torch.tensor(window_ids) * ctx
        x = torch.stack([data[s:s + ctx] for s in starts])
        y = torch.stack([data[s + 1:s + ctx + 1] for s in starts])
        return x, y

    val_sample = val_windows[:: max(1, len(val_windows) // 64)][:64]

    def validation_loss():
        model.eval()
        with torch.no_grad():
            losses = []
            for i in range(0, len(val_sample), 16):
                x, y = batch_of(val_sample[i:i + 16])
                losses.append(F.cross_entropy(model(x).view(-1, VOCAB_SIZE), y.view(-1)).item())
        model.train()
        return sum(losses) / len(losses)

    log = {"train": [], "validation": []}
    train_started = time.time()
    for step in range(args.steps):
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step)
        x, y = batch_of([rng.choice(train_windows) for _ in range(args.batch)])
        loss = F.cross_entropy(model(x).view(-1, VOCAB_SIZE), y.view(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        log["train"].append([step, round(loss.item(), 4)])
        if step % 50 == 0 or step == args.steps - 1:
            val = validation_loss()
            log["validation"].append([step, round(val, 4)])
            elapsed = time.time() - train_started
            print(f"step {step}: train {loss.item():.3f}, validation {val:.3f}, {elapsed:.0f} s, "
                  f"{(step + 1) * args.batch * ctx / elapsed:.0f} tokens/s", flush=True)

    os.makedirs(args.out, exist_ok=True)
    write_safetensors(os.path.join(args.out, "model.safetensors"), hf_state_dict(model))
    write_json(os.path.join(args.out, "config.json"), config)
    write_json(os.path.join(args.out, "tokenizer.json"), tokenizer_json(bpe, merges))
    write_json(os.path.join(args.out, "tokenizer_config.json"), {
        "add_bos_token": True, "add_eos_token": False, "bos_token": END_OF_TEXT, "eos_token": END_OF_TEXT,
        "unk_token": None, "model_max_length": config["max_position_embeddings"],
        "tokenizer_class": "PreTrainedTokenizerFast"})
    write_json(os.path.join(args.out, "generation_config.json"),
               {"bos_token_id": eot, "eos_token_id": eot, "do_sample": False})
    total = time.time() - started
    log["settings"] = {"steps": args.steps, "batch": args.batch, "context": ctx, "lr": args.lr, "seed": args.seed,
                       "threads": args.threads, "parameters": params, "corpus_bytes": corpus_bytes,
                       "corpus_tokens": len(stream), "train_windows": len(train_windows),
                       "validation_windows": len(val_windows), "seconds": round(total),
                       "torch": torch.__version__}
    write_json(os.path.join(args.out, "training_log.json"), log)
    print(f"done in {total:.0f} s; wrote {args.out}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
