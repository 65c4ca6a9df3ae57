#!/usr/bin/env bash
# Paper-scale throughput on one accelerator: AlphaGateau and the ResNet baseline (5 blocks, width 128), 8×8 chess,
# Gumbel 128 simulations, 256 games; training at batch 256 and 1024; JSON lines to $OUT/bench.jsonl, progress (compile
# and run times) to $OUT/bench.log.  Run in the repository root after `source scripts/gpu/setup.sh`.  Each case has
# its own time limit, so one slow case leaves the others' results.  Usage: selfplay.sh [selfplay|train|all]
set -u
AG=alphagateau.network:make_alphagateau
what=${1:-all}
bench() { timeout "$1" python3 -m zerolab bench "${@:2}" 2>>"$OUT/bench.log" | tee -a "$OUT/bench.jsonl"; }
if [ "$what" != train ]; then
  bench 200 --game chess --model resnet --width 128 --blocks 5 --simulations 128 --games 256 --plies 8 --repeats 1 --only selfplay
  bench 240 --game chess --model $AG --width 128 --blocks 5 --simulations 128 --games 256 --plies 8 --repeats 1 --only selfplay --no-reference
fi
if [ "$what" != selfplay ]; then
  bench 90 --game chess --model $AG --width 128 --blocks 5 --batch-size 256 --only train
  bench 90 --game chess --model $AG --width 128 --blocks 5 --batch-size 1024 --only train
  bench 60 --game chess --model resnet --width 128 --blocks 5 --batch-size 1024 --only train
fi
grep -v "^[WI][0-9]" "$OUT/bench.log" | tail -20
