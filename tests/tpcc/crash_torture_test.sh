#!/bin/sh
# tpcc crash-test end to end, in real processes: 200 cycles of run, SIGKILL and recovery of a
# small TPC-C database lose no acknowledged New-Order and keep the checks; and the oracle, told
# of a New-Order the engine never acknowledged, reports it lost and fails (so the check can fail).
# The seed is random and printed; SM_SEED=<n> replays its choices.
#   crash_torture_test.sh TPCC_BINARY SCRATCH_DIR
set -u
tpcc="$1"
dir="$2"
rm -rf "$dir" && mkdir -p "$dir" || exit 1
failures=0
seed_args=""
[ -n "${SM_SEED:-}" ] && seed_args="--seed $SM_SEED"

# expect_json STATUS GOT OUTPUT_FILE PATTERN...: the exit status GOT is STATUS and the last
# line (the JSON object) matches every PATTERN (a grep regular expression).
expect_json() {
  want="$1"; got="$2"; file="$3"; shift 3
  last=$(tail -1 "$file")
  if [ "$got" -ne "$want" ]; then
    echo "FAIL: exit status $got, want $want"; failures=$((failures + 1))
  fi
  for key in "$@"; do
    if ! printf '%s' "$last" | grep -q -- "$key"; then
      echo "FAIL: the JSON line lacks $key: $last"; failures=$((failures + 1))
    fi
  done
}

# 200 cycles; short runs between the kills keep the database (and the checks) small, and a
# fresh database after cycle 100 exercises --reload-every.
# shellcheck disable=SC2086
"$tpcc" crash-test --cycles 200 --reload-every 100 --kill-ms 50-250 --progress-every 10 --db "$dir/db" $seed_args \
  >"$dir/torture.out" 2>&1
rc=$?
cat "$dir/torture.out"
expect_json 0 "$rc" "$dir/torture.out" '"cycles":200[,}]' '"lost_commits":0[,}]' \
  '"incomplete_commits":0[,}]' '"consistency_failures":0[,}]' '"verify_failures":0[,}]' \
  '"passed":true' '"acknowledged_commits":[1-9]' '"reloads":1[,}]' '"seed":'

# The oracle's own test: one acknowledgement the engine never gave must come out as lost.
# shellcheck disable=SC2086
"$tpcc" crash-test --cycles 3 --TEST-drop-ack --db "$dir/oracle" $seed_args >"$dir/oracle.out" 2>&1
rc=$?
echo "--- with an acknowledgement the engine never gave:"
grep -E "TEST|FAILURE|result" "$dir/oracle.out"
expect_json 1 "$rc" "$dir/oracle.out" '"lost_commits":1[,}]' '"passed":false'

[ "$failures" -eq 0 ] && rm -rf "$dir" && echo "all passed" && exit 0
echo "$failures failed (kept $dir)"; exit 1
