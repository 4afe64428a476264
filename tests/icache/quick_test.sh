#!/bin/sh
# steps_bench --quick with the TPC-C runs: it exits 0 and its last line is a JSON object with
# the figures the STEPS issue names (and the paper's mix), each a number. A malformed L1-I
# geometry and an unknown workload are refused.
#   quick_test.sh STEPS_BENCH TPCC_BINARY SCRATCH_DIR
set -u
bench="$1"
tpcc="$2"
dir="$3"
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
rm -rf "$dir"
[ "$failures" -eq 0 ] && echo "all passed" && exit 0
exit 1
