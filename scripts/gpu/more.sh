#!/usr/bin/env bash
# Scaling and the other packages on one accelerator: AlphaGateau self-play at 1024 games, maia-1900 forward and
# search throughput, search-contempt's cost over mctx (paper-like batch).  After `source scripts/gpu/setup.sh`.
set -u
AG=alphagateau.network:make_alphagateau
timeout 220 python3 -m zerolab bench --game chess --model $AG --width 128 --blocks 5 --simulations 128 --games 1024 \
  --plies 4 --repeats 1 --only selfplay --no-reference 2>>"$OUT/bench.log" | tee -a "$OUT/bench.jsonl"
timeout 100 python3 -m zerolab.networks.lc0 bench --batches 1,256,1024 --simulations 128 --search-batch 256 --seconds 3 --json 2>>"$OUT/bench.log" | tee "$OUT/lc0.txt"
for game in gardner_chess chess; do
  timeout 80 python3 -m contempt_search.bench --game $game --kind gumbel --kind muzero --batch-size 256 --simulations 128 \
    --sc-limit 5 --repeats 2 2>>"$OUT/bench.log" | tee -a "$OUT/contempt.jsonl"
done
grep -v "^[WI][0-9]" "$OUT/bench.log" | tail -12
