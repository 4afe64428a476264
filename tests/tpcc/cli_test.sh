#!/bin/sh
# The tpcc driver end to end on a real directory: --version names the version and revision;
# bad options give a message and exit status 2, a missing database 1; a load is reused and a
# different warehouse count refused; a short run ends with a JSON line; check passes.
#   cli_test.sh TPCC_BINARY SCRATCH_DIR
set -u
tpcc="$1"
dir="$2"
rm -rf "$dir" && mkdir -p "$dir" || exit 1
failures=0

# expect STATUS PATTERN -- ARGS...: the exit status is STATUS and the output matches PATTERN.
expect() {
  want="$1"; pattern="$2"; shift 3
  out=$("$tpcc" "$@" 2>&1); got=$?
  if [ "$got" -ne "$want" ] || ! printf '%s\n' "$out" | grep -q -- "$pattern"; then
    echo "FAIL: tpcc $* -> exit $got (want $want), output:"; printf '%s\n' "$out" | tail -5
    failures=$((failures + 1))
  else
    echo "ok: tpcc $* -> $got"
  fi
}

db="$dir/db"
expect 0 "^tpcc [0-9]*\.[0-9]*\.[0-9]* (revision " -- --version
expect 2 "warehouses"        -- load -w 0 --db "$db"
expect 2 "mix"               -- run --mix sideways --db "$db"
expect 2 "commit"            -- run --commit maybe --db "$db"
expect 2 "buffer-pool"       -- load --buffer-pool lots --db "$db"
expect 2 "buffer-pool"       -- load --buffer-pool 99999999999999999999999G --db "$db"
expect 2 "buffer-pool"       -- load --buffer-pool 20000000000T --db "$db"
expect 2 "log-buffer"        -- run --log-buffer 5000 --db "$db"
expect 2 "reserve-free"      -- run --reserve-free 1x --db "$db"
expect 2 "reserve-free"      -- run --reserve-free 8iB --db "$db"
expect 2 "reserve-free"      -- run --reserve-free -8M --db "$db"
expect 2 "think-time"        -- run --think-time soon --db "$db"
expect 2 "steps"             -- run --steps maybe --db "$db"
expect 2 "need --steps on"   -- run --team-size 4 --db "$db"
expect 2 "read-for-update"   -- run --read-for-update never --db "$db"
expect 2 ""                  -- frobnicate
expect 1 "no database"       -- run --db "$dir/none"
expect 1 "no database"       -- check --db "$dir/none"
expect 1 "cannot open"       -- load --db /proc/tpcc-cannot-be-here --interval 0

expect 0 "consistency after load: pass" -- load -w 1 --db "$db" --interval 0
expect 0 "reusing"           -- load -w 1 --db "$db" --interval 0
expect 2 "loaded with 1 warehouses" -- load -w 2 --db "$db"
expect 2 "loaded with 1 warehouses" -- run -w 2 --db "$db"
expect 0 '"throughput_tx_per_s"' -- run --db "$db" --duration 1 --users 4 --commit async --output json --interval 0.5
expect 0 '"reserve_free":"16M"' -- run --db "$db" --duration 0.5 --log-buffer 64M --reserve-free 16M --output json --interval 0
expect 0 '"log_buffer":"64MiB"' -- run --db "$db" --duration 0.5 --log-buffer 64MiB --reserve-free 16kb --output json --interval 0
out=$("$tpcc" run --db "$db" --duration 0.5 --output json --steps on --interval 0 2>&1 | tail -1)
for key in '"throughput_tx_per_s"' '"nopm"' '"consistency":"pass"' '"commit_mode":"durable"' \
           '"steps":"on"' '"steps_teams"' '"average_team_size"' '"forced_turns"' \
           '"ctx_skipped_latch"' '"workers"' \
           '"warehouses":1' '"users":10' '"new_order"' '"p95_ms"'; do
  if ! printf '%s' "$out" | grep -q -- "$key"; then
    echo "FAIL: the JSON line lacks $key: $out"; failures=$((failures + 1))
  fi
done
expect 0 "CTX latched" -- run --db "$db" --duration 0.5 --steps on --interval 0
# A run of a number of transactions: exactly that many are measured.
out=$("$tpcc" run --db "$db" --transactions 300 --warmup-transactions 50 --output json --interval 0 2>&1 | tail -1)
if ! printf '%s' "$out" | grep -q -- '"completed":300,'; then
  echo "FAIL: --transactions 300 did not measure 300: $out"; failures=$((failures + 1))
fi
expect 2 "warmup-transactions" -- run --db "$db" --transactions 10 --warmup 1
expect 2 "needs --transactions" -- run --db "$db" --callgrind-window
expect 0 "check: pass"       -- check --db "$db"
expect 2 "conditions"        -- check --db "$db" --conditions 0-13

# The CH-benCHmark verbs: refused without the CH tables (saying how to add them), then run.
expect 2 "tpcc load --ch"    -- query 1 --db "$db"
expect 2 "tpcc load --ch"    -- htap --db "$db" --duration 0.5
expect 0 "CH-benCHmark tables" -- load --ch --db "$db" --interval 0
expect 0 "there already"     -- load --ch --db "$db" --interval 0
expect 2 "1 to 22"           -- query 23 --db "$db"
expect 2 "1 to 22"           -- query seven --db "$db"
expect 2 "format"            -- query 1 --format xml --db "$db"
expect 0 "Q6: 1 rows"        -- query 6 --db "$db"
expect 0 "HashAggregate"     -- query 1 --explain --analyze --format none --db "$db"
expect 0 "Buffer 64 tuples"  -- query 1 --explain --buffers on --buffer-size 64 --format none --db "$db"
expect 2 "buffers"           -- query 1 --buffers sometimes --db "$db"
expect 2 "buffer-size"       -- query 1 --buffers on --buffer-size 0 --db "$db"
out=$("$tpcc" query all --db "$db" --format none --output json 2>&1 | tail -1)
for key in '"result_sha256"' '"rows_read"' '"total_ms"' '"query":22'; do
  if ! printf '%s' "$out" | grep -q -- "$key"; then
    echo "FAIL: the query JSON lacks $key: $out"; failures=$((failures + 1))
  fi
done
expect 0 '"tpcc_slowdown"'   -- htap --db "$db" --duration 0.5 --users 4 --commit async --output json --interval 0
expect 0 "exported order_line" -- export "$dir/csv" --db "$db"
if ! head -1 "$dir/csv/order_line.csv" | grep -q '^ol_w_id,ol_d_id,ol_o_id,ol_number,'; then
  echo "FAIL: order_line.csv has no header line"; failures=$((failures + 1))
fi
# A database another process holds (here: a run in progress) is refused, not waited for.
"$tpcc" run --db "$db" --duration 3 --interval 0 --checks off >/dev/null 2>&1 &
sleep 1
expect 1 "Busy"              -- query 1 --db "$db"
wait

rm -rf "$dir"
[ "$failures" -eq 0 ] && echo "all passed" && exit 0
echo "$failures failed"; exit 1
