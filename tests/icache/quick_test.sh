#!/bin/sh
# steps_bench --quick with the TPC-C runs: it exits 0 and its last line is a JSON object with
# the figures of its targets (and the paper's mix), each a number. A malformed L1-I
# geometry and an unknown workload are refused. Then code_layout profiles a few transactions
# on the same database and writes a layout whose every section is a function of the binary.
#   quick_test.sh STEPS_BENCH TPCC_BINARY SCRATCH_DIR CODE_LAYOUT
set -u
bench="$1"
tpcc="$2"
dir="$3"
layout_tool="$4"
rm -rf "$dir" && mkdir -p "$dir" || exit 1
# A malformed geometry is refused before anything runs.
bad=$("$bench" --no-fetch --tpcc "$tpcc" --tpcc-db "$dir/tpcc" --tpcc-geometry 32768,8 2>&1)
if [ $? -ne 2 ] || ! printf '%s' "$bad" | grep -q "SIZE,WAYS,LINE"; then
  echo "FAIL: --tpcc-geometry 32768,8 was not refused: $bad"; exit 1
fi
# So is an unknown TPC-C workload.
bad=$("$bench" --no-fetch --tpcc "$tpcc" --tpcc-db "$dir/tpcc" --tpcc-workloads payment,nope 2>&1)
if [ $? -ne 2 ] || ! printf '%s' "$bad" | grep -q "not 'nope'"; then
  echo "FAIL: --tpcc-workloads nope was not refused: $bad"; exit 1
fi
out=$("$bench" --quick --dir "$dir/fetch" --tpcc "$tpcc" --tpcc-db "$dir/tpcc" 2>&1)
status=$?
printf '%s\n' "$out" | tail -30
[ "$status" -eq 0 ] || { echo "FAIL: steps_bench exited $status"; exit 1; }
json=$(printf '%s\n' "$out" | tail -1)
failures=0
for key in index_fetch_l1i_reduction_pct index_fetch_per_extra_fiber_pct \
           payment_l1i_reduction_pct payment_branch_mispredict_reduction_pct \
           payment_instructions_increase_pct mix_l1i_reduction_pct \
           payment_l1i_misses_per_txn_serial mix_l1i_misses_per_txn_serial \
           mix_no_delivery_l1i_reduction_pct; do
  if ! printf '%s' "$json" | grep -q "\"$key\":-\{0,1\}[0-9]"; then
    echo "FAIL: the JSON line lacks a number for $key"; failures=$((failures + 1))
  fi
done
out=$("$layout_tool" --tpcc "$tpcc" --tpcc-db "$dir/tpcc-1w" --transactions 20 --warmup 10 \
  --output "$dir/layout.txt" 2>&1)
status=$?
printf '%s\n' "$out" | tail -3
if [ "$status" -ne 0 ]; then
  echo "FAIL: code_layout exited $status"; failures=$((failures + 1))
else
  sections=$(grep -c '^\.text\.' "$dir/layout.txt")
  [ "$sections" -ge 50 ] || { echo "FAIL: the layout lists $sections functions"; failures=$((failures + 1)); }
  nm --defined-only "$tpcc" | awk '{ print ".text." $3 }' | sort -u > "$dir/defined.txt"
  unknown=$(grep '^\.text\.' "$dir/layout.txt" | sort | comm -23 - "$dir/defined.txt" | head -3)
  [ -z "$unknown" ] || { echo "FAIL: the layout lists what the binary lacks: $unknown"; failures=$((failures + 1)); }
  printf '%s\n' "$out" | tail -1 | grep -q '"bytes_90pct":[0-9]' ||
    { echo "FAIL: code_layout's JSON line lacks bytes_90pct"; failures=$((failures + 1)); }
fi
rm -rf "$dir"
[ "$failures" -eq 0 ] && echo "all passed" && exit 0
exit 1
