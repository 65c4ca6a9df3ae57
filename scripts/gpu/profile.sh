#!/usr/bin/env bash
# Profiles (scripts/gpu/profile.py) of AlphaGateau and ResNet self-play and of AlphaGateau training at the paper's
# sizes, then a smoke run of `alphagateau-speed --preset paper` (one iteration of 256 games × 32 plies per network,
# 2-game rating matches).  After `source scripts/gpu/setup.sh`.
set -u
timeout 200 python3 scripts/gpu/profile.py --out /tmp/profile-ag --plies 2 2>>"$OUT/profile.log" | tee "$OUT/profile.jsonl"
timeout 100 python3 scripts/gpu/profile.py --out /tmp/profile-resnet --model resnet --plies 2 --only selfplay \
  2>>"$OUT/profile.log" | tee -a "$OUT/profile.jsonl"
start=$(date +%s)
timeout 260 python3 -m experiments run alphagateau-speed --preset paper --workdir /tmp/agspeed iterations=1 \
  selfplay.plies_per_iteration=32 evaluation.games=2 evaluation.max_game_plies=8 progress=False >"$OUT/paper-smoke.log" 2>&1
echo "alphagateau-speed paper smoke: rc $? in $(( $(date +%s) - start )) s" | tee -a "$OUT/paper-smoke.log"
for run in alphagateau resnet; do cp /tmp/agspeed/$run/metrics.jsonl "$OUT/paper-smoke-$run.jsonl" 2>/dev/null; done
grep -v "^[WI][0-9]" "$OUT/paper-smoke.log" | tail -15
