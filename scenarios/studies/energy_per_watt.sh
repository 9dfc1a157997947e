#!/bin/sh
# Study: perf per watt against the energy of a DRAM byte. What if DRAM cost half (or
# twice) the energy per byte read? Sweeps energy.dram.read_pj_per_byte (the presets ship
# 160 pJ, assumed: docs/model.md, energy) from 20 to 640 for
#   - the peak fp16 matmul on MN-Core 2 (scenarios/peak_matmul_fp16.ron), and
#   - a real graph: GPT attention in fp32 (scenarios/graphs/MHA-GPT-inf-fp32-bs1.ron, the
#     import's `default` layouts),
# 6 timing runs each, and charts GFLOPS/W (`--metric gflops_per_w`). Energy knobs change
# joules, never cycles.
#
# Reading the charts (docs/study_energy_peak_matmul.svg, docs/study_energy_mha_gpt.svg):
# the matmul gives 583 GFLOPS/W at the shipped 160 pJ, 649 at 40 and 513 at 320: it
# reads 1.5 GiB from DRAM (A's slices again for each of C's 8 steps), 14% of its 1.89 J,
# while its 1.1 TFLOP take 44%. The attention block gives 7.3 GFLOPS/W and hardly moves
# (8.0 at 20 pJ, 5.5 at 640): its 20.8 µs cost 1.4 mJ of static power, 58% of its 2.5 mJ,
# so at this size the way to more GFLOPS/W is fewer cycles (a planned layout: 11,226
# cycles against the default's 15,620), not cheaper DRAM.
#
# Usage: scenarios/studies/energy_per_watt.sh [OUT_DIR]   (default: study-out); run from
# the repository's root with `mnsim` on the PATH. Copies both charts into docs/.
set -eu
out=${1:-study-out}
values=20,40,80,160,320,640
mnsim sweep scenarios/peak_matmul_fp16.ron --mode timing \
    --set energy.dram.read_pj_per_byte=$values --metric gflops_per_w \
    --out "$out/peak_matmul"
mnsim sweep scenarios/graphs/MHA-GPT-inf-fp32-bs1.ron --plan default --mode timing \
    --set energy.dram.read_pj_per_byte=$values --metric gflops_per_w \
    --out "$out/mha_gpt"
cp "$out/peak_matmul/sweep.svg" docs/study_energy_peak_matmul.svg
cp "$out/mha_gpt/sweep.svg" docs/study_energy_mha_gpt.svg
