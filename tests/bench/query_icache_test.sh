#!/bin/sh
# query_icache end to end, small: one warehouse after two seconds of the mix, the paper's
# queries under callgrind at one L1-I size (buffers off, on and auto, results checked equal by
# the tool), a two-point cardinality sweep and one buffer size, then natively; then the
# calibration writes a footprint table with a threshold line; bad options exit 2.
# Usage: query_icache_test.sh QUERY_ICACHE TPCC SCRATCH_DIR
set -eu
tool="$1" tpcc="$2" dir="$3"
rm -rf "$dir"
mkdir -p "$dir"
fail() { echo "FAIL: $*"; exit 1; }
run() {
  "$tool" --tpcc "$tpcc" --dir "$dir/data" -w 1 --tpcc-seconds 2 --buffer-pool-mib 256 \
    --repeat 1 --i1 16384,4,64 --callgrind-districts 1 --wall-warehouses 1 \
    --cardinalities 10,1000 --buffer-sizes 10 --auto-threshold 600 "$@"
}
run > "$dir/out" 2>&1 || { cat "$dir/out"; fail "the run"; }
last=$(tail -n 1 "$dir/out")
for key in '"q1_l1i_reduction_pct":' '"q3_hash_wall_speedup":' '"q3_nlj_instructions_increase_pct":' \
           '"ch_auto_total_speedup":' '"cycles_threshold":' '"wall_threshold":' \
           '"calibrated_threshold":' '"size10.on_16k4w":' '"sweep1000.on_16k4w":'; do
  echo "$last" | grep -q "$key" || fail "the JSON line lacks $key: $last"
done
# Each plan read order lines under callgrind, and buffers cost instructions of their own.
echo "$last" | grep -Eq '"q1.off_16k4w":\{[^}]*"instructions":[1-9]' || fail "no q1 figures: $last"
echo "$last" | grep -Eq '"rows_read":[1-9]' || fail "no rows read: $last"

run --calibrate --output "$dir/footprints.txt" > "$dir/cal" 2>&1 || { cat "$dir/cal"; fail "calibrate"; }
grep -Eq '^threshold ([0-9]+|none)$' "$dir/footprints.txt" || fail "no threshold line"
grep -q '^module scan ' "$dir/footprints.txt" || fail "the table lost its modules"
grep -q '^reusing the CH database' "$dir/cal" || fail "the calibration did not reuse the data"

set +e
run --calibrate-by nope > "$dir/bad" 2>&1
rc=$?
set -e
[ "$rc" -eq 2 ] || { cat "$dir/bad"; fail "a bad option exited $rc, not 2"; }
rm -rf "$dir"
echo "PASS"
