#!/bin/sh
# The README's table of real graphs: for each graph, `mnsim plan` chooses every layout
# (plan `auto`, seeded with the import's `default` layouts) within a time limit, the
# chosen plan is written into a copy of the scenario and run in timing mode, and one
# Markdown row is printed: graph, ops, planned cycles, FLOP/cycle against the peak of
# the dtype the run computes in, the `default` plan's cycles, and the time to plan.
#
# The schedule is each scenario's own (imported graphs: overlapped, the default); pass
# `--schedule sequential` as MNSIM_FLAGS to plan and run op after op instead.
#
# Usage (from the repository root, after `cargo build --release`):
#   scenarios/studies/graph_table.sh [TIME_LIMIT_SECONDS] [GRAPH.json|SCENARIO.ron ...]
# Default: a 5 s limit, scenarios/graphs/*.ron and GPT, LLaMa, SDPA, JAX-MQA, the gated
# MLP and two fused matmuls of ../shared/graphs. Needs `jq`.
set -eu
limit=${1:-5}
[ $# -gt 0 ] && shift
mnsim=${MNSIM:-target/release/mnsim}
flags=${MNSIM_FLAGS:-}
g=../shared/graphs
if [ $# -eq 0 ]; then
    set -- scenarios/graphs/*.ron \
        $g/MHA-GPT-inf-fp32-bs1.json $g/MHA-LLaMa-inf-fp32-bs1.json \
        $g/sdpa-plain-simplified-f16.json $g/JAX-MQA-inf-fp32.json $g/gated-mlp-f32.json \
        $g/matmul_bias_post_ops_chain_fusion.json $g/matmul_2d_4d.json
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| graph | ops | planned cycles | FLOP/cycle (of peak) | \`default\` plan | time to plan |"
echo "|---|---|---|---|---|---|"
for f in "$@"; do
    name=$(basename "$f" | sed 's/\.[a-z]*$//')
    case "$f" in
        *.json) "$mnsim" import "$f" -o "$tmp/$name.ron" > /dev/null 2>&1 ;;
        *) cp "$f" "$tmp/$name.ron" ;;
    esac
    s=$tmp/$name.ron
    ops=$(sed -n 's/.*imported by `mnsim import`: \([0-9]*\) ops.*/\1/p' "$s" | head -1)
    # shellcheck disable=SC2086
    "$mnsim" plan "$s" --plan auto --json --time-limit "$limit" --write planned $flags > "$tmp/plan.json"
    secs=$(jq '.total_seconds' "$tmp/plan.json")
    # shellcheck disable=SC2086
    "$mnsim" run "$s" --mode timing --out "$tmp/$name" $flags > /dev/null 2>&1
    r=$tmp/$name/planned/report.json
    d=$tmp/$name/default/report.json
    jq -r --arg name "$name" --arg ops "$ops" --arg secs "$secs" --slurpfile d "$d" '
        def th: tostring | until(test("^[0-9]{4}") | not; sub("(?<a>[0-9])(?<b>[0-9]{3})(?<c>,|$)"; "\(.a),\(.b)\(.c)"));
        ([.ops[].flops // 0] | add) as $f
        | (.peak_flops_per_cycle // 0) as $p
        | ($f / .total_cycles) as $r
        | "| \($name) | \($ops) | \(.total_cycles | th) | \($r | floor | th) (\(if $p > 0 then ($r / $p * 1000 | round / 10) else 0 end)% of \($p | floor | th)) | \($d[0].total_cycles | th) | \($secs | tonumber | . * 10 | round / 10) s |"
    ' "$r"
done
