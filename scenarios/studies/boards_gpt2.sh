#!/bin/sh
# Study: GPT-2 small (prefill of 128 tokens, and one decode step with a 1024-token KV
# cache) and the LLaMA-style 4-layer scan on 1, 2 and 4 boards of an MN-3 node
# (mn3_node: 4 mncore1 boards on the host's PCIe switch). Each model is imported for the
# machine with that many boards, planned (the planner spreads it over the boards:
# docs/planner.md, spread starts) with its inputs already on the boards (a server keeps
# the weights and the KV cache in the boards' DRAMs between steps:
# networks.Node.host.inputs=0), and run; then the 4-board decode step is planned again
# at each inter-board link rate (a sweep with --replan) and charted.
#
# Prints one line per model and board count: cycles, x bound, joules, planning seconds;
# writes OUT_DIR/<model>_<boards>/report/ and OUT_DIR/decode_link/sweep.{csv,svg,html}.
# About 15 minutes on a 2-core machine (9 plans, 6 of them over many boards, each planning
# one board first; then 8 more over 4 boards in the sweep).
#
# Usage: scenarios/studies/boards_gpt2.sh [OUT_DIR]   (default: study-boards)
set -eu
out=${1:-study-boards}
models=scenarios/workloads/models
resident="networks.Node.host.inputs=0"
mkdir -p "$out"
printf '%-12s %6s %14s %9s %9s %8s\n' model boards cycles x_bound joules plan_s
for spec in gpt2-prefill:gpt2_small_prefill_s128_f32 gpt2-decode:gpt2_small_decode_kv1024_f32 \
    llama-scan:llama_4layer_scan_s256_bf16; do
    label=${spec%%:*} model=${spec#*:}
    for boards in 1 2 4; do
        dir="$out/${model}_$boards"
        mkdir -p "$dir"
        mnsim machines mn3_node --set "levels.Board.count=$boards" --ron > "$dir/machine.ron"
        mnsim import "$models/$model.mlir" --machine "$dir/machine.ron" -o "$dir/model.ron" 2> /dev/null
        start=$(date +%s.%N)
        mnsim plan "$dir/model.ron" --set "$resident" --write best > /dev/null 2>&1
        end=$(date +%s.%N)
        mnsim run "$dir/model.ron" --plan best --set "$resident" --out "$dir/report" > /dev/null 2>&1
        python3 - "$dir/report/report.json" "$label" "$boards" "$start" "$end" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print("%-12s %6s %14s %9.2f %9.2f %8.1f" % (
    sys.argv[2], sys.argv[3], f"{r['total_cycles']:,}", r["total_cycles"] / r["bound_cycles"],
    r["energy"]["total_j"], float(sys.argv[5]) - float(sys.argv[4])))
EOF
    done
done
# How fast must the links between boards be for the decode step to scale? The 4-board
# step planned again at each rate (bytes/cycle per link and direction; mn3_node ships
# 15.75, PCIe Gen3 x16).
mnsim sweep "$out/gpt2_small_decode_kv1024_f32_4/model.ron" --plan auto --replan \
    --set "$resident" \
    --set networks.Node.bytes_per_cycle=1,2,4,8,15.75,32,64,128 \
    --x networks.Node.bytes_per_cycle --out "$out/decode_link" > /dev/null
cat "$out/decode_link/sweep.csv"
