#!/usr/bin/env bash
# The prepared GPU check: one short script for a session that is lent a GPU machine (the device
# tool runs it in the repository root and returns $OUT). About 2-4 minutes on one H200:
#   - the LM world-model backbone (embedding throughput, one bf16 LoRA step), and
#   - a cycle's proposals sampled one prompt at a time vs batched across tasks (issue 36 item 6),
# both on a model of the offline default's shape (SmolLM2-135M) built from its config: random
# weights, no download. Results: $OUT/gpu_lm_backbone.json (and the log beside it); record them in
# benchmarks/RESULTS.md. Without a GPU the script says so and exits 0.
# Second part, `compare` (issue 50 item 4; below): OpenEvolve vs the program agent on a served model,
# at most about 9 minutes. Each part fits the device tool's 10-minute limit on its own, so run them as
# two commands: `bash benchmarks/device_check.sh backbone`, then `bash benchmarks/device_check.sh
# compare` (no argument: both, in one command, for a longer limit).
set -u
PARTS="${*:-backbone compare}"
OUT=${OUT:-/tmp/rsi-device-check}
mkdir -p "$OUT"
export OUT
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || echo "no nvidia-smi"; } > "$OUT/gpu.txt" 2>&1
python -c "import torch, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'transformers', transformers.__version__)" > "$OUT/versions.txt" 2>&1
if [[ " $PARTS " == *" backbone "* ]]; then
PYTHONPATH=. timeout 420 python benchmarks/gpu_lm_backbone.py > "$OUT/gpu_lm_backbone.log" 2>&1
echo "rc=$?" >> "$OUT/gpu_lm_backbone.log"
tail -n 40 "$OUT/gpu_lm_backbone.log"
fi

# --- compare openevolve (issue 50 item 4): OpenEvolve 0.4.1 vs the workbench's program agent, one
# served model on the GPU (the offline default, SmolLM2-135M-Instruct, prepared from its wheel: no
# download), function minimisation and circle packing (the harder task), 5 seeds, COMPARE_CALLS calls
# each, through the metering proxy. Guarded: whatever fails here, the section above already ran and
# the script still exits 0. Results: $OUT/compare_<task>/{table.txt,compare.json} and compare.log.
compare_section() {
  local calls="${COMPARE_CALLS:-4}" port=8011 srv=""
  python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null \
    || { echo "compare: no CUDA GPU here, skipped"; return 0; }
  python -c "import openevolve, dacite" 2>/dev/null || { echo "compare: openevolve not installed (pip install -e '.[openevolve]')"; return 0; }
  local model_dir
  model_dir=$(PYTHONPATH=. python -c "from rsi_workbench.models.prepare import resolve_name; print(resolve_name('default'))" 2>/dev/null) \
    || { PYTHONPATH=. timeout 300 python -m rsi_workbench models prepare >/dev/null 2>&1 && \
         model_dir=$(PYTHONPATH=. python -c "from rsi_workbench.models.prepare import resolve_name; print(resolve_name('default'))"); } \
    || { echo "compare: the offline default model could not be prepared"; return 0; }
  PYTHONPATH=. HF_HUB_OFFLINE=1 python -m rsi_workbench models serve --device cuda:0 --port "$port" > "$OUT/compare_server.log" 2>&1 &
  srv=$!
  local up=0
  for _ in $(seq 1 45); do
    if python -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1], timeout=5)" \
        "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1; then up=1; break; fi
    kill -0 "$srv" 2>/dev/null || break
    sleep 2
  done
  if [ "$up" != 1 ]; then echo "compare: the model server did not come up (see compare_server.log)"; kill "$srv" 2>/dev/null; return 0; fi
  printf 'model: {backend: openai, base_url: "http://127.0.0.1:%s/v1", name: "%s", timeout_s: 600}\n' "$port" "$model_dir" > "$OUT/compare_model.yaml"
  for task in function_minimization circle_packing_cascade; do
    PYTHONPATH=. timeout --kill-after=10 220 python -m rsi_workbench compare openevolve "examples/openevolve/$task" \
      --model "$OUT/compare_model.yaml" --calls "$calls" --seeds 5 --max-tokens 1024 \
      --allow-unsandboxed-peer --out "$OUT/compare_$task" >> "$OUT/compare.log" 2>&1
    echo "compare $task rc=$?" >> "$OUT/compare.log"
    # compare.json holds every program; keep only the table and a compact summary under $OUT
    python - "$OUT/compare_$task" <<'PY' >> "$OUT/compare.log" 2>&1 || true
import json, shutil, sys
from pathlib import Path
d = Path(sys.argv[1])
if (d / "compare.json").is_file():
    r = json.loads((d / "compare.json").read_text())
    keep = ("tool", "seed", "rc", "best_rescored", "gain", "calls_to_level", "failed_edits", "tokens", "meter", "own", "counts_match", "best_holds")
    r["rows"] = [{k: row.get(k) for k in keep} for row in r["rows"]]
    (d.parent / f"{d.name}.json").write_text(json.dumps(r, indent=1))
for p in d.iterdir() if d.is_dir() else []:
    if p.is_dir():
        shutil.rmtree(p, ignore_errors=True)
PY
  done
  kill "$srv" 2>/dev/null; wait "$srv" 2>/dev/null
  tail -n 60 "$OUT/compare.log"
}
if [[ " $PARTS " == *" compare "* ]]; then
  compare_section || echo "compare: section failed (rc=$?)"
fi
exit 0
