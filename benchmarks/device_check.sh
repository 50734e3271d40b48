#!/usr/bin/env bash
# The prepared GPU check: one short script for a session that is lent a GPU machine (the device
# tool runs it in the repository root and returns $OUT). About 2-4 minutes on one H200:
#   - the LM world-model backbone (embedding throughput, one bf16 LoRA step), and
#   - a cycle's proposals sampled one prompt at a time vs batched across tasks (issue 36 item 6),
# both on a model of the offline default's shape (SmolLM2-135M) built from its config: random
# weights, no download. Results: $OUT/gpu_lm_backbone.json (and the log beside it); record them in
# benchmarks/RESULTS.md. Without a GPU the script says so and exits 0.
set -u
OUT=${OUT:-/tmp/rsi-device-check}
mkdir -p "$OUT"
export OUT
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || echo "no nvidia-smi"; } > "$OUT/gpu.txt" 2>&1
python -c "import torch, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'transformers', transformers.__version__)" > "$OUT/versions.txt" 2>&1
PYTHONPATH=. timeout 420 python benchmarks/gpu_lm_backbone.py > "$OUT/gpu_lm_backbone.log" 2>&1
echo "rc=$?" >> "$OUT/gpu_lm_backbone.log"
tail -n 40 "$OUT/gpu_lm_backbone.log"
