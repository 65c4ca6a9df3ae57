#!/usr/bin/env bash
# One lease's checks, in order of value, inside about nine minutes (after `source scripts/gpu/setup.sh`): the project's
# own search loop against the bare pgx + mctx loop and the network floor (ResNet 5×128, then AlphaGateau 5×128; 8×8
# chess, Gumbel 128 simulations, 256 games × 8 plies), each network in every dtype of $DTYPES (model.dtype; default
# "bfloat16 float32", bfloat16 first as the paper presets use it), the searchless transformer's training step (9M, batch 1024,
# float32 and bfloat16: FLOPs, samples/s, utilisation of the measured bf16 peak), then the alphagateau-speed paper
# preset until the time left runs out (its log says how far the first iteration got).  JSON lines to
# $OUT/bench.jsonl and $OUT/distill.jsonl; compile and run times in $OUT/bench.log.
set -u
AG=alphagateau.network:make_alphagateau
budget=${1:-540}
left() { echo $(( budget - SECONDS > 10 ? budget - SECONDS : 10 )); }
bench() { timeout "$1" python3 -m zerolab bench "${@:2}" 2>>"$OUT/bench.log" | tee -a "$OUT/bench.jsonl"; echo "rc $? at ${SECONDS}s"; }
for dtype in ${DTYPES:-bfloat16 float32}; do
  bench 150 --game chess --model resnet --dtype "$dtype" --width 128 --blocks 5 --simulations 128 --games 256 --plies 8 --repeats 1 --only selfplay
  bench 120 --game chess --model $AG --dtype "$dtype" --width 128 --blocks 5 --simulations 128 --games 256 --plies 8 --repeats 1 --only selfplay --no-reference
done
timeout 100 python3 scripts/gpu/distill_mfu.py --batch-size 1024 --steps 20 --dtype float32 bfloat16 --peak-tflops 790 \
  2>>"$OUT/bench.log" | tee -a "$OUT/distill.jsonl"; echo "rc $? at ${SECONDS}s"
timeout "$(left)" python3 -m experiments run alphagateau-speed --preset paper --workdir /tmp/paper-alphagateau-speed \
  progress=False >"$OUT/paper-smoke-alphagateau-speed.log" 2>&1; echo "alphagateau-speed paper: rc $? at ${SECONDS}s"
grep -v "^[WI][0-9]" "$OUT/bench.log" | tail -30
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader
