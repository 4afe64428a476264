#!/bin/sh
# The tpcc driver end to end on a real directory: --version names the version and revision;
# bad options and unknown verbs give a message and exit status 2 (numeric options name their
# range), a missing database 1; a load is reused and a different warehouse count refused, one
# that cannot fit the disk refused before it starts; a run labels its progress per interval,
# prints p90 against the specification's limits, writes only JSON (or CSV rows) on stdout when
# asked, and ends cleanly at SIGINT or SIGTERM; check passes; check, query, export and sm_admin
# verify change no file of the database (they open it read-only), and refuse one a crash left
# until --recover recovers it; drop removes a database and nothing else; sm_admin's exit
# statuses agree with tpcc's; --engine refuses what only our engine does, and runs SQLite's
# load, run and check when the build has its adapter; ycsb loads once, refuses another record
# count, and runs a workload with its summary and JSON.
#   cli_test.sh TPCC_BINARY SCRATCH_DIR SM_ADMIN_BINARY
set -u
tpcc="$1"
dir="$2"
admin="$3"
rm -rf "$dir" && mkdir -p "$dir" || exit 1
failures=0

# The database's files: each one's hash, and each entry's size and modification time.
state() {
  find "$1" -type f -exec sha256sum {} + | sort
  find "$1" -printf '%p %s %T@\n' | sort
}
# unchanged WHAT STATE: the database's files are as STATE recorded them.
unchanged() {
  if [ "$(state "$db")" != "$2" ]; then
    echo "FAIL: $1 changed the database's files"; failures=$((failures + 1))
  fi
}

# expect STATUS PATTERN -- ARGS...: the exit status is STATUS and the output matches PATTERN.
expect() {
  want="$1"; pattern="$2"; shift 3
  out=$("$tpcc" "$@" 2>&1); got=$?  # $out stays for the checks after
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
expect 2 "unknown verb 'frobnicate'" -- frobnicate
expect 2 "1..65535"          -- load -w 70000 --db "$db"
# Other engines (docs/design/engines.md): unknown ones, our engine's verbs and options refused.
expect 2 "no engine named 'nosuch'" -- load --engine nosuch --db "$db"
expect 2 "only load, run, check and ycsb" -- export "$dir/csv" --engine sqlite --db "$db"
expect 2 "steps is our engine's" -- run --engine sqlite --steps on --db "$db"
# One that this build has: load, run and check end to end, in <db>/<engine>.
if "$tpcc" load --help | grep -q "sqlite"; then
  expect 1 "no sqlite database"  -- check --engine sqlite --db "$dir/engines"
  expect 0 "consistency after load: pass" -- load --engine sqlite --db "$dir/engines" --interval 0
  expect 0 "consistency: pass"   -- run --engine sqlite --db "$dir/engines" --duration 0.5 \
                                    --workers 1 --users 1 --interval 0
  expect 0 "check: pass"         -- check --engine sqlite --db "$dir/engines"
  [ -f "$dir/engines/sqlite/tpcc.sqlite" ] ||
    { echo "FAIL: no $dir/engines/sqlite/tpcc.sqlite"; failures=$((failures + 1)); }
fi
# The YCSB-like workload (tpcc/ycsb.h) on our engine.
ycsb="$dir/ycsb"
expect 2 "workload"          -- ycsb run --workload z --db "$ycsb"
expect 1 "no database"       -- ycsb run --db "$ycsb"
expect 0 "loaded 2000 records" -- ycsb load --records 2000 --db "$ycsb" --interval 0
expect 0 "reusing the YCSB load" -- ycsb load --db "$ycsb"
expect 2 "holds a YCSB load of 2000" -- ycsb load --records 3000 --db "$ycsb"
expect 0 "records scanned"   -- ycsb run --workload e --duration 0.3 --warmup 0 --db "$ycsb" \
                                --interval 0
expect 0 '"throughput_ops_per_s"' -- ycsb run --workload a --distribution uniform --duration 0.3 \
                                --warmup 0 --db "$ycsb" --interval 0 --output json
expect 1 "no completed TPC-C load" -- run --db "$ycsb" --duration 0.1
expect 2 "1..655350"         -- run --users 0 --db "$db"
expect 2 "0.001.."           -- run --duration 0 --db "$db"
expect 2 "0..1024"           -- run --workers many --db "$db"
expect 2 "0..3600"           -- run --interval -1 --db "$db"
expect 2 "positive --interval" -- run --output csv --interval 0 --db "$db"
expect 2 "output csv is for" -- check --output csv --db "$db"
expect 1 "no database"       -- run --db "$dir/none"
expect 1 "no database"       -- check --db "$dir/none"
expect 1 "cannot open"       -- load --db /proc/tpcc-cannot-be-here --interval 0

expect 0 "consistency after load: pass" -- load -w 1 --db "$db" --interval 0 --output json
# The space a load needs, as estimated before it starts, against this one on disk.
expected=$(printf '%s\n' "$out" | tail -1 | sed -n 's/.*"expected_bytes":\([0-9]*\).*/\1/p')
actual=$(du -sb "$db" | cut -f1)
if [ -z "$expected" ] || [ "$actual" -gt $((expected * 5 / 4)) ] || [ "$actual" -lt $((expected / 2)) ]; then
  echo "FAIL: a one-warehouse load takes $actual bytes, estimated ${expected:-?}"
  failures=$((failures + 1))
fi
# The largest load (about 4.7 TiB) is refused at once on a disk that cannot hold it, not hours
# later; a disk that could is not asked to.
if [ "$(df -P -k "$dir" | awk 'NR == 2 { print $4 }')" -lt 4500000000 ]; then
  expect 1 "takes about"     -- load -w 65535 --db "$dir/huge" --interval 0
  expect 0 "removed the database" -- drop --db "$dir/huge"
fi
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

# Progress lines give each interval's figures, labelled; the summary has p90 against the limits
# of clause 5.2.5.3; with one warehouse the remote figures are said not to apply.
expect 0 "last 0.3 s: .* tx/s | New-Order [0-9]*  Payment" -- run --db "$db" --duration 1 --interval 0.3
for pattern in 'p90 ms' 'New-Order .* 5 s ok' 'Stock-Level .* 20 s ok' 'remote lines and payments do not apply'; do
  if ! printf '%s\n' "$out" | grep -q -- "$pattern"; then
    echo "FAIL: the run's output lacks '$pattern'"; failures=$((failures + 1))
  fi
done
if printf '%s\n' "$out" | grep -q 'remote lines [0-9]'; then
  echo "FAIL: one warehouse, yet remote lines are printed as a figure"; failures=$((failures + 1))
fi
# --output json: stdout is the JSON object and nothing else.
"$tpcc" run --db "$db" --duration 0.5 --interval 0.2 --output json > "$dir/stdout" 2> "$dir/stderr"
if [ "$(wc -l < "$dir/stdout")" -ne 1 ] || ! grep -q '^{.*"p90_within_limits":true.*}$' "$dir/stdout" ||
   ! grep -q 'New-Order' "$dir/stderr"; then
  echo "FAIL: --output json did not write one JSON line on stdout:"; head -3 "$dir/stdout"
  failures=$((failures + 1))
fi
# --output csv: a header and a row of 15 fields per interval on stdout.
"$tpcc" run --db "$db" --duration 1 --interval 0.25 --output csv > "$dir/stdout" 2> /dev/null
rows=$(awk -F, 'NR == 1 && /^elapsed_s,phase,interval_s,tx_per_s,new_order,/ { next }
                NF == 15 && $2 == "measured" { n++; next } { print "bad"; exit }
                END { print n + 0 }' "$dir/stdout")
if [ "$rows" = bad ] || [ "$rows" -lt 3 ]; then
  echo "FAIL: --output csv wrote:"; head -5 "$dir/stdout"; failures=$((failures + 1))
fi
# SIGINT ends a run with its summary and checks, then the process ends by the signal (130).
"$tpcc" run --db "$db" --duration 60 --interval 0 --output json > "$dir/stdout" 2> "$dir/stderr" &
pid=$!
sleep 2
kill -INT "$pid"
wait "$pid"; got=$?
if [ "$got" -ne 130 ] || ! grep -q 'ended early' "$dir/stderr" ||
   ! grep -q 'consistency after the run: pass' "$dir/stderr" ||
   ! grep -q '"interrupted":true' "$dir/stdout"; then
  echo "FAIL: a run given SIGINT exited $got (want 130):"; tail -5 "$dir/stderr"
  failures=$((failures + 1))
fi
# SIGTERM in the warm-up: nothing was measured, which is a failure (1), not a result of zero.
"$tpcc" run --db "$db" --warmup 60 --duration 1 --interval 0 > "$dir/stdout" 2>&1 &
pid=$!
sleep 2
kill -TERM "$pid"
wait "$pid"; got=$?
if [ "$got" -ne 1 ] || ! grep -q 'completed no transaction' "$dir/stdout"; then
  echo "FAIL: a run given SIGTERM in its warm-up exited $got (want 1):"; tail -3 "$dir/stdout"
  failures=$((failures + 1))
fi
# A run of a number of transactions: exactly that many are measured.
out=$("$tpcc" run --db "$db" --transactions 300 --warmup-transactions 50 --output json --interval 0 2>&1 | tail -1)
if ! printf '%s' "$out" | grep -q -- '"completed":300,'; then
  echo "FAIL: --transactions 300 did not measure 300: $out"; failures=$((failures + 1))
fi
expect 2 "warmup-transactions" -- run --db "$db" --transactions 10 --warmup 1
expect 2 "needs --transactions" -- run --db "$db" --callgrind-window
expect 0 "check: pass"       -- check --db "$db"
expect 2 "conditions"        -- check --db "$db" --conditions 0-13
before=$(state "$db")
expect 0 "check: pass"       -- check --db "$db"
unchanged "tpcc check" "$before"
out=$("$admin" verify "$db" 2>&1); got=$?
if [ "$got" -ne 0 ] || ! printf '%s\n' "$out" | grep -q "read-only" ||
   ! printf '%s\n' "$out" | grep -q "^verify: ok"; then
  echo "FAIL: sm_admin verify -> exit $got: $out" | tail -3; failures=$((failures + 1))
fi
unchanged "sm_admin verify" "$before"

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
expect 0 "3 streams, share scans on" -- query all --streams 3 --share-scans on --format none --db "$db"
expect 0 '"page_reads_per_query"' -- query 6 --streams 2 --share-scans off --output json --db "$db"
expect 2 "share-scans"       -- query 1 --share-scans sometimes --db "$db"
expect 0 '"tpcc_slowdown"'   -- htap --db "$db" --duration 0.5 --users 4 --commit async --output json --interval 0
expect 0 '"tpcc_slowdown"'   -- htap --db "$db" --duration 0.5 --users 4 --query-streams 2 --share-scans on --commit async --output json --interval 0
before=$(state "$db")
expect 0 "exported order_line" -- export "$dir/csv" --db "$db"
expect 0 "Q6: 1 rows"        -- query 6 --db "$db"
unchanged "tpcc export and query" "$before"
if ! head -1 "$dir/csv/order_line.csv" | grep -q '^ol_w_id,ol_d_id,ol_o_id,ol_number,'; then
  echo "FAIL: order_line.csv has no header line"; failures=$((failures + 1))
fi
# A database another process holds (here: a run in progress) is refused, not waited for.
"$tpcc" run --db "$db" --duration 3 --interval 0 --checks off >/dev/null 2>&1 &
sleep 1
expect 1 "Busy"              -- query 1 --db "$db"
expect 1 "Busy"              -- drop --db "$db"
wait

# A run killed mid-way leaves a database that needs recovery: check and verify refuse it,
# say how to recover, and change nothing; --recover recovers (and verifies, checks) it.
"$tpcc" run --db "$db" --duration 60 --output csv --interval 0.2 --checks off \
  >"$dir/killed.csv" 2>/dev/null &
pid=$!
# Until an interval has committed transactions, so the run has changed the database (a busy
# machine may take long to start it: up to two minutes).
committed() { awk -F, 'NR > 1 && $4 > 0 { found = 1 } END { exit !found }' "$dir/killed.csv"; }
tries=0
while ! committed && [ "$tries" -lt 1200 ]; do
  sleep 0.1; tries=$((tries + 1))
done
kill -9 "$pid"; wait "$pid" 2>/dev/null
if ! committed; then
  echo "FAIL: the run to be killed committed nothing in two minutes"; failures=$((failures + 1))
fi
before=$(state "$db")
expect 1 "needs recovery"    -- check --db "$db"
if ! printf '%s\n' "$out" | grep -q -- "tpcc check --recover"; then
  echo "FAIL: tpcc check does not say how to recover: $out" | tail -3
  failures=$((failures + 1))
fi
expect 1 "needs recovery"    -- query 6 --db "$db"
out=$("$admin" verify "$db" 2>&1); got=$?
if [ "$got" -ne 1 ] || ! printf '%s\n' "$out" | grep -q "needs recovery" ||
   ! printf '%s\n' "$out" | grep -q -- "sm_admin verify --recover"; then
  echo "FAIL: sm_admin verify of a crashed database -> exit $got: $out" | tail -3
  failures=$((failures + 1))
fi
unchanged "check and verify of a database that needs recovery" "$before"
out=$("$admin" verify --recover "$db" 2>&1); got=$?
if [ "$got" -ne 0 ] || ! printf '%s\n' "$out" | grep -q "recovery: " ||
   ! printf '%s\n' "$out" | grep -q "^verify: ok"; then
  echo "FAIL: sm_admin verify --recover -> exit $got: $out" | tail -3; failures=$((failures + 1))
fi
expect 0 "check: pass"       -- check --db "$db"
expect 0 "check: pass"       -- check --recover --db "$db"

# sm_admin: the same exit statuses.
for args in "frobnicate:2:unknown verb" "verify:2:required" "verify $dir/none:1:cannot open" \
            "tables $db:0:order_line"; do
  a=${args%%:*}; rest=${args#*:}; want=${rest%%:*}; pattern=${rest#*:}
  out=$($admin $a 2>&1); got=$?
  if [ "$got" -ne "$want" ] || ! printf '%s\n' "$out" | grep -q -- "$pattern"; then
    echo "FAIL: sm_admin $a -> exit $got (want $want): $out" | tail -3; failures=$((failures + 1))
  fi
done

# drop removes a database, and refuses a directory that is not one, or holds anything else.
mkdir -p "$dir/notdb" && touch "$dir/notdb/keep"
expect 1 "not a database"    -- drop --db "$dir/notdb"
touch "$db/notes.txt"
expect 1 "notes.txt"         -- drop --db "$db"
rm "$db/notes.txt"
expect 0 "removed the database" -- drop --db "$db"
expect 1 "no such database"  -- drop --db "$db"
if [ -e "$db" ] || [ ! -e "$dir/notdb/keep" ]; then
  echo "FAIL: drop left $db or removed $dir/notdb"; failures=$((failures + 1))
fi

rm -rf "$dir"
[ "$failures" -eq 0 ] && echo "all passed" && exit 0
echo "$failures failed"; exit 1
