#!/bin/sh
# sm_admin dump and load round trip on a one-warehouse TPC-C database (tables and indexes):
# the loaded database dumps to the same bytes, passes tpcc check and sm_admin verify; a load
# into an existing database, a truncated dump and a damaged one are refused and create nothing.
# sm_admin --version names the version.
#   dump_load_test.sh SM_ADMIN TPCC SCRATCH_DIR
set -u
admin="$1"
tpcc="$2"
dir="$3"
rm -rf "$dir" && mkdir -p "$dir" || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

"$admin" --version | grep -q "^sm_admin [0-9]*\.[0-9]*\.[0-9]*$" || fail "sm_admin --version"
"$tpcc" load -w 1 --db "$dir/a" >/dev/null || fail "tpcc load"
"$admin" dump "$dir/a" "$dir/a.dump" || fail "dump of a"
"$admin" load "$dir/a.dump" "$dir/b" || fail "load into b"
"$admin" dump "$dir/b" "$dir/b.dump" || fail "dump of b"
cmp "$dir/a.dump" "$dir/b.dump" || fail "the loaded database dumps to other bytes"
"$tpcc" check --db "$dir/b" >"$dir/check.out" 2>&1 || { tail -5 "$dir/check.out"; fail "check"; }
"$admin" verify "$dir/b" >"$dir/verify.out" 2>&1 || { tail -5 "$dir/verify.out"; fail "verify"; }

# refused: load OUT expecting a failure that leaves no database in OUT
refused() {
  what="$1"; dump="$2"; out="$3"
  if "$admin" load "$dump" "$out" >"$dir/refused.out" 2>&1; then
    fail "$what: loaded"
  else
    echo "ok: $what refused: $(tail -1 "$dir/refused.out")"
  fi
}
refused "load into an existing database" "$dir/a.dump" "$dir/b"
head -c 100000 "$dir/a.dump" >"$dir/short.dump"
refused "a truncated dump" "$dir/short.dump" "$dir/c"
[ -e "$dir/c" ] && fail "a truncated dump created $dir/c"
cp "$dir/a.dump" "$dir/bad.dump"
printf 'X' | dd of="$dir/bad.dump" bs=1 seek=200000 conv=notrunc 2>/dev/null
refused "a damaged dump" "$dir/bad.dump" "$dir/d"
[ -e "$dir/d" ] && fail "a damaged dump created $dir/d"

[ "$failures" -eq 0 ] && echo "ok: dump and load" && rm -rf "$dir"
[ "$failures" -eq 0 ]
