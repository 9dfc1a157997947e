#!/bin/sh
# Study: how fast do the DRAM and the Group broadcast port have to be for the peak fp16
# matmul on MN-Core 2 (scenarios/peak_matmul_fp16.ron)? Sweeps the DRAM bandwidth
# (bytes/cycle per Group DRAM; mncore2 ships 170.7) against the Group port's broadcast
# rate (bytes/cycle; ships 64), 5 x 4 = 20 timing runs, in parallel.
#
# Reading the chart (docs/study_peak_matmul_bandwidth.svg, one line per port rate): with
# a 32 bytes/cycle port, DRAM bandwidth past 64 bytes/cycle buys nothing, as B's
# broadcast load waits on the port; at 64 the same; from 128 on (128 and 256 give equal
# cycles, drawn as one line) DRAM bandwidth pays up to 128 bytes/cycle. Past that corner
# the matrix units' 2.1 M cycles are half the run and A's distribute and C's gather over
# the Group port set the rest: more DRAM or broadcast bandwidth no longer helps.
#
# Usage: scenarios/studies/peak_matmul_bandwidth.sh [OUT_DIR]   (default: study-out)
set -eu
out=${1:-study-out}
mnsim sweep scenarios/peak_matmul_fp16.ron --mode timing \
    --set dram.bytes_per_cycle=32,64,128,256,512 \
    --set links.Group.broadcast.parent=32,64,128,256 \
    --x dram.bytes_per_cycle \
    --out "$out"
