#!/bin/sh
# bench_query end to end on one warehouse: it prepares the data (load, a short run of the mix,
# export, SQLite), reuses it on a second call, checks all 22 results equal (and equal on two
# threads), profiles one query under callgrind (as a whole and per operator), and refuses bad
# options with exit status 2.
# Usage: query_smoke_test.sh BENCH_QUERY TPCC SQL_FILE SCRATCH_DIR
set -eu
bench="$1" tpcc="$2" sql="$3" dir="$4"
rm -rf "$dir"
mkdir -p "$dir"
run() {
  "$bench" --tpcc "$tpcc" --sql "$sql" --dir "$dir/data" -w 1 --tpcc-seconds 2 --repeat 1 \
    --buffer-pool-mib 256 "$@"
}
fail() { echo "FAIL: $*"; exit 1; }

run --threads 2 > "$dir/first.out" 2>&1 || { cat "$dir/first.out"; fail "the first run"; }
last=$(tail -n 1 "$dir/first.out")
for key in '"results_match":true' '"ch_q1_ms":' '"ch_q22_sqlite_ms":' '"sqlite_ratio":' \
           '"ch_total_ms":' '"queries_slower_than_sqlite":' '"ch_q9_rows_read":' \
           '"ch_q1_speedup_2t":' '"ch_total_speedup_2t":'; do
  echo "$last" | grep -q "$key" || fail "the JSON line lacks $key: $last"
done
grep -q '^SQLite loaded' "$dir/first.out" || fail "the first run did not load SQLite"

run --queries 6 --callgrind 6 > "$dir/second.out" 2>&1 || { cat "$dir/second.out"; fail "rerun"; }
grep -q '^reusing the CH database' "$dir/second.out" || fail "the second run did not reuse the data"
grep -q '^SQLite loaded' "$dir/second.out" && fail "the second run loaded SQLite again"
last=$(tail -n 1 "$dir/second.out")
echo "$last" | grep -q '"ch_q6_instructions_per_row_read":[1-9]' ||
  fail "no callgrind figure for Q6: $last"
# Q6 by operator: an aggregation over a scan, each with instructions of its own.
echo "$last" | grep -Eq '"ch_q6_operators":\[\{"depth":0,[^}]*"operator":"HashAggregate"' ||
  fail "no aggregation at the root of Q6's operators: $last"
echo "$last" | grep -Eq '\{"depth":1,[^}]*"operator":"TableScan","rows":[1-9][0-9]*,"rows_in":[1-9][0-9]*,"self_instructions":[1-9]' ||
  fail "no scan with rows and instructions under Q6's root: $last"
grep -q 'TableScan order_line' "$dir/second.out" || fail "Q6's operator tree was not printed"
echo "$last" | grep -q '"results_match":false' || fail "a subset claimed all 22 match: $last"

for bad in "--threads 0" "--threads 65" "--queries 23" "--callgrind 0" "--repeat 0" "--buffers some" "--i1 big"; do
  set +e
  # shellcheck disable=SC2086
  run $bad > "$dir/bad.out" 2>&1
  rc=$?
  set -e
  [ "$rc" -eq 2 ] || { cat "$dir/bad.out"; fail "'$bad' exited $rc, not 2"; }
done
rm -rf "$dir"
echo "PASS"
