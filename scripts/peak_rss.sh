#!/bin/sh
# Peak resident memory of one mnsim run, measured with GNU time (`/usr/bin/time -v`), beside
# the estimate mnsim checks before a functional run (docs/memory.md).
#
# Usage: scripts/peak_rss.sh SCENARIO [mnsim run arguments...]
#   scripts/peak_rss.sh scenarios/transfer_blog_1024x512.ron --plan blog --mode functional
# Uses `mnsim` from PATH (cargo install --path sim, or target/release on PATH).
set -eu
if [ $# -lt 1 ]; then
    echo "usage: $0 SCENARIO [mnsim run arguments...]" >&2
    exit 2
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
/usr/bin/time -v mnsim run "$@" >/dev/null 2>"$log" || { cat "$log" >&2; exit 1; }
kib=$(sed -n 's/^[[:space:]]*Maximum resident set size (kbytes): //p' "$log")
secs=$(sed -n 's/^[[:space:]]*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$log")
echo "peak RSS: $kib KiB ($((kib / 1024)) MiB), wall clock $secs"
