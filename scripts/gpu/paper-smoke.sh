#!/usr/bin/env bash
# Runs each training experiment's paper preset for N minutes on the device (default 8) and records its steady-state
# rates and memory: the plan first (`python -m experiments plan`: compiled costs and estimates), then the run itself
# until the time limit, whose log says how far the first iteration got (self-play compile, plies played, replay
# window, training updates, checkpoint) and whose metrics.jsonl has selfplay_moves_per_s, train_samples_per_s and
# device_peak_gib for every finished iteration.  After `source scripts/gpu/setup.sh`.
#   bash scripts/gpu/paper-smoke.sh [MINUTES] [EXPERIMENT ...]
set -u
minutes=${1:-8}
shift || true
experiments=${*:-"alphagateau-speed quickstart alphagateau-finetune sai-go contempt-train"}
for name in $experiments; do
  extra=""
  [ "$name" = contempt-train ] && extra="from_scratch=True"  # the paper starts from maia-1900: convert it first
  log="$OUT/paper-smoke-$name.log"
  timeout 300 python3 -m experiments plan "$name" --preset paper $extra >"$OUT/plan-$name.txt" 2>>"$log"
  start=$(date +%s)
  timeout "$((minutes * 60))" python3 -m experiments run "$name" --preset paper --workdir "/tmp/paper-$name" \
    progress=False $extra >>"$log" 2>&1
  rc=$?
  echo "$name: rc $rc after $(( $(date +%s) - start )) s (124: stopped at the time limit)" | tee -a "$OUT/paper-smoke.txt"
  grep -E "compiled in|self-play played|replay window of|updates of|checkpoint saved" "$log" | tail -8 \
    | tee -a "$OUT/paper-smoke.txt"
  find "/tmp/paper-$name" -name metrics.jsonl -exec sh -c 'echo "== $1"; cat "$1"' _ {} \; >>"$OUT/paper-smoke.txt"
done
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader >>"$OUT/paper-smoke.txt"
