#!/bin/sh
# Writes the workbook's own model's files from the folder train_kjv.py wrote, with the
# workbook's own tools (run from the repository root, after ./workbook has built them):
#   training/make_model_files.sh /tmp/kjv-train
# 1. the Hugging Face folder, copied to data/models/kjv-llama-2m/hf;
# 2. the GGUF files in F16, Q8_0 and Q4_0 (`workbook convert`);
# 3. goldens.json: the float64 reference's greedy continuation of a few prompts from every
#    file (`workbook reference --prompt ... --greedy 32`), which the test
#    tests/generate/trained_model_check.py holds the solution's decoder to;
# 4. the loss curve, docs/figures/kjv-loss.svg.
set -eu
trained=$1
out=data/models/kjv-llama-2m
mkdir -p "$out/hf"
for f in config.json model.safetensors tokenizer.json tokenizer_config.json generation_config.json training_log.json; do
  cp "$trained/$f" "$out/hf/$f"
done
for type in f16 q8_0 q4_0; do
  ./workbook convert "$out/hf" --type "$type" --name kjv-llama-2m -o "$out/model-$type.gguf"
done
python3 training/make_goldens.py "$out" > "$out/goldens.json.partial"
mv "$out/goldens.json.partial" "$out/goldens.json"
python3 training/plot_loss.py "$out/hf/training_log.json" docs/figures/kjv-loss.svg
