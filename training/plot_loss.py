#!/usr/bin/python3
"""Draws the loss curve of training_log.json (train_kjv.py's) as an SVG, with nothing but the
standard library: training loss per step (a running mean over 20 steps, since single batches
are noisy) and the held-out validation loss at its checkpoints.

    python3 training/plot_loss.py data/models/kjv-llama-2m/hf/training_log.json docs/figures/kjv-loss.svg
"""

import json
import sys


def main():
    log = json.load(open(sys.argv[1]))
    train = log["train"]
    validation = log["validation"]
    window = 20
    smooth = []
    for i in range(len(train)):
        chunk = train[max(0, i - window + 1):i + 1]
        smooth.append((train[i][0], sum(v for _, v in chunk) / len(chunk)))
    steps = train[-1][0] + 1
    top = max(v for _, v in validation + train[:1])
    low = min(min(v for _, v in smooth), min(v for _, v in validation))
    top, low = (int(top) + 1), max(0, int(low) - 1)
    W, H, L, R, T, B = 640, 360, 56, 20, 36, 44

    def x(step):
        return L + (W - L - R) * step / steps

    def y(loss):
        return T + (H - T - B) * (top - loss) / (top - low)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<text x="{L}" y="20" font-size="14">kjv-llama-2m: cross-entropy (nats per token) while training</text>']
    for loss in range(low, top + 1):
        out.append(f'<line x1="{L}" x2="{W - R}" y1="{y(loss):.1f}" y2="{y(loss):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{L - 8}" y="{y(loss) + 4:.1f}" text-anchor="end">{loss}</text>')
    for step in range(0, steps + 1, max(1, steps // 6 // 100 * 100) or 100):
        out.append(f'<text x="{x(step):.1f}" y="{H - B + 18}" text-anchor="middle">{step}</text>')
    out.append(f'<text x="{(L + W - R) / 2}" y="{H - 8}" text-anchor="middle">step ({log["settings"]["batch"]} x '
               f'{log["settings"]["context"]} tokens each)</text>')
    path = " ".join(f'{"M" if i == 0 else "L"}{x(s):.1f},{y(v):.1f}' for i, (s, v) in enumerate(smooth))
    out.append(f'<path d="{path}" fill="none" stroke="#4a7ab5" stroke-width="1.5"/>')
    path = " ".join(f'{"M" if i == 0 else "L"}{x(s):.1f},{y(v):.1f}' for i, (s, v) in enumerate(validation))
    out.append(f'<path d="{path}" fill="none" stroke="#c33" stroke-width="1.5" stroke-dasharray="5 3"/>')
    for s, v in validation:
        out.append(f'<circle cx="{x(s):.1f}" cy="{y(v):.1f}" r="2.5" fill="#c33"/>')
    out.append(f'<text x="{W - R - 4}" y="{T + 14}" text-anchor="end" fill="#4a7ab5">training (mean of {window} steps)</text>')
    out.append(f'<text x="{W - R - 4}" y="{T + 30}" text-anchor="end" fill="#c33">held-out validation</text>')
    out.append("</svg>")
    with open(sys.argv[2], "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
