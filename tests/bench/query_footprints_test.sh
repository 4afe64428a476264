#!/bin/sh
# query_footprints end to end on two modules: it loads a one-warehouse CH database, measures a
# scan and a hash join's build under callgrind, writes a table the query layer parses, and
# refuses an unknown module with exit status 2.
# Usage: query_footprints_test.sh QUERY_FOOTPRINTS TPCC SCRATCH_DIR
set -eu
tool="$1" tpcc="$2" dir="$3"
rm -rf "$dir"
mkdir -p "$dir"
fail() { echo "FAIL: $*"; exit 1; }
"$tool" --db "$dir/db/sm" --tpcc "$tpcc" --output "$dir/footprints.txt" \
  --modules scan,hash_join.build > "$dir/out" 2>&1 || { cat "$dir/out"; fail "the run"; }
last=$(tail -n 1 "$dir/out")
echo "$last" | grep -Eq '"scan_bytes":[1-9]' || fail "no scan footprint: $last"
echo "$last" | grep -Eq '"hash_join.build_bytes":[1-9]' || fail "no build footprint: $last"
echo "$last" | grep -q '"modules":2' || fail "not two modules: $last"
grep -q '^module scan ' "$dir/footprints.txt" || fail "the table lacks the scan"
grep -q '^function 0 ' "$dir/footprints.txt" || fail "the table lacks functions"
set +e
"$tool" --db "$dir/db/sm" --tpcc "$tpcc" --output "$dir/x.txt" --modules nope > "$dir/bad" 2>&1
rc=$?
set -e
[ "$rc" -eq 2 ] || { cat "$dir/bad"; fail "an unknown module exited $rc, not 2"; }
rm -rf "$dir"
echo "PASS"
