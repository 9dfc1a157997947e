#!/bin/sh
# Study: how fast do the DRAM and the Group broadcast port have to be for the peak fp16
# matmul on MN-Core 2 (scenarios/peak_matmul_fp16.ron)? Sweeps the DRAM bandwidth
# (bytes/cycle per Group DRAM; mncore2 ships 170.7) against the Group port's broadcast
# rate (bytes/cycle; ships 64), 5 x 4 = 20 timing runs, in parallel.
#
# Reading the chart (docs/study_peak_matmul_bandwidth.svg, one line per port rate): at
# 32 bytes/cycle of DRAM every port rate gives 13.7 M cycles: the DRAM feeds B and A's
# slices, sent again for each of C's 8 steps. From 64 bytes/cycle on DRAM no longer
# matters: a 32 bytes/cycle port gives 9.0 M, 64 (the shipped rate) 6.9 M, and 128 or
# 256 (equal cycles, drawn as one line) 6.3 M. Past that corner A's re-sends, which use
# the Group port's distribute rate, and C's Store set the run; the matrix units' 2.1 M
# cycles run behind them: more DRAM or broadcast bandwidth no longer helps.
#
# Usage: scenarios/studies/peak_matmul_bandwidth.sh [OUT_DIR]   (default: study-out)
set -eu
out=${1:-study-out}
mnsim sweep scenarios/peak_matmul_fp16.ron --mode timing \
    --set dram.bytes_per_cycle=32,64,128,256,512 \
    --set links.Group.broadcast.parent=32,64,128,256 \
    --x dram.bytes_per_cycle \
    --out "$out"
