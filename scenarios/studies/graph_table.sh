#!/bin/sh
# The README's table of real graphs: for each graph, `mnsim plan` chooses every layout
# (plan `auto`, seeded with the import's `default` layouts) within a work budget, the
# chosen plan is written into a copy of the scenario and run in timing mode, and one
# Markdown row is printed: graph, ops, planned cycles, the bound (the fewest cycles any
# layout could give, docs/model.md) and the planned cycles as a multiple of it, FLOP/cycle
# against the peak of the dtype the run computes in, the `default` plan's cycles, and the
# time to plan.
#
# The schedule is each scenario's own (imported graphs: overlapped, the default); pass
# `--schedule sequential` as MNSIM_FLAGS to plan and run op after op instead.
#
# Usage (from the repository root, after `cargo build --release`):
#   scenarios/studies/graph_table.sh [WORK] [GRAPH.json|SCENARIO.ron ...]
# Default: a work budget of 300000 (`mnsim plan --work`, the budget `mnsim run` gives an
# imported graph, so the rows are what `run` plans, on any machine), scenarios/graphs/*.ron (GPT attention, the gated MLP, SDPA in
# f16) and LLaMa attention, JAX-MQA, two matmuls, a layer norm, a softmax and a bias add
# of scenarios/workloads/graphs. Needs `jq`.
set -eu
work=${1:-300000}
[ $# -gt 0 ] && shift
mnsim=${MNSIM:-target/release/mnsim}
flags=${MNSIM_FLAGS:-}
g=scenarios/workloads/graphs
if [ $# -eq 0 ]; then
    set -- scenarios/graphs/*.ron \
        $g/MHA-LLaMa-inf-fp32-bs1.json $g/JAX-MQA-inf-fp32.json $g/matmul_2d_4d.json \
        $g/matmul_bias_post_ops_chain_fusion.json $g/lnorm.json $g/softmax.json $g/biasadd.json
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| graph | ops | planned cycles | bound | × bound | FLOP/cycle (of peak) | \`default\` plan | time to plan (search) |"
echo "|---|---|---|---|---|---|---|---|"
for f in "$@"; do
    name=$(basename "$f" | sed 's/\.[a-z]*$//')
    case "$f" in
        *.json) "$mnsim" import "$f" -o "$tmp/$name.ron" > /dev/null 2>&1 ;;
        *) cp "$f" "$tmp/$name.ron" ;;
    esac
    s=$tmp/$name.ron
    ops=$(sed -n 's/.*imported by `mnsim import`: \([0-9]*\) ops.*/\1/p' "$s" | head -1)
    # The `default` plan runs in the file as imported: the plan written below may add
    # Relayouts to the program, which the other plans need not suit.
    cp "$s" "$tmp/$name.default.ron"
    # shellcheck disable=SC2086
    "$mnsim" plan "$s" --plan auto --json --work "$work" --write planned $flags > "$tmp/plan.json"
    secs=$(jq '.total_seconds' "$tmp/plan.json")
    search=$(jq -r 'if .complete then "complete" else "\(.evaluated)" end' "$tmp/plan.json")
    # shellcheck disable=SC2086
    "$mnsim" run "$s" --plan planned --mode timing --out "$tmp/$name/planned" $flags > /dev/null 2>&1
    # shellcheck disable=SC2086
    "$mnsim" run "$tmp/$name.default.ron" --plan default --mode timing --out "$tmp/$name/default" \
        $flags > /dev/null 2>&1
    r=$tmp/$name/planned/report.json
    d=$tmp/$name/default/report.json
    jq -r --arg name "$name" --arg ops "$ops" --arg secs "$secs" --arg search "$search" \
        --slurpfile d "$d" '
        def th: tostring | until(test("^[0-9]{4}") | not; sub("(?<a>[0-9])(?<b>[0-9]{3})(?<c>,|$)"; "\(.a),\(.b)\(.c)"));
        def dec(n): (. * pow(10; n) | round) as $x | ($x / pow(10; n)) | tostring;
        def one: (. * 10 | round) as $x | "\($x / 10 | floor).\($x % 10)";
        ([.ops[].flops // 0] | add) as $f
        | (.peak_flops_per_cycle // 0) as $p
        | ($f / .total_cycles) as $r
        | (if $p > 0 then $r / $p * 100 else 0 end) as $pct
        | (if .bound_cycles > 0 then "\(.bound_cycles | th) (\(.bound_resource))" else "–" end) as $bound
        | (if .bound_cycles > 0 then "\(.total_cycles / .bound_cycles | dec(2))×" else "–" end) as $xb
        | "| \($name) | \($ops) | \(.total_cycles | th) | \($bound) | \($xb) | \($r | floor | th) (\($pct | if . < 1 then dec(2) else one end)% of \($p | floor | th)) | \($d[0].total_cycles | th) | \($secs | tonumber | one) s (\($search | th)\(if $search == "complete" then "" else " evaluated" end)) |"
    ' "$r"
done
