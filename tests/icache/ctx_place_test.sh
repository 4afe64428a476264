#!/bin/sh
# ctx_place --fast on the steps_bench just built: it exits 0, ends with a JSON line naming the sites it enabled,
# and writes a placement whose every site is one of the candidates the operations reached.
#   ctx_place_test.sh CTX_PLACE STEPS_BENCH SCRATCH_DIR
set -u
place="$1"
bench="$2"
dir="$3"
rm -rf "$dir" && mkdir -p "$dir" || exit 1
out=$("$place" --fast --steps-bench "$bench" --dir "$dir/fetch" --output "$dir/placement.txt" 2>&1)
status=$?
printf '%s\n' "$out" | tail -15
[ "$status" -eq 0 ] || { echo "FAIL: ctx_place exited $status"; exit 1; }
json=$(printf '%s\n' "$out" | tail -1)
failures=0
for key in '"sites_enabled":\[' '"operations":\[' '"output":' '"extra_misses_placed":'; do
  printf '%s' "$json" | grep -q "$key" || { echo "FAIL: JSON lacks $key"; failures=$((failures + 1)); }
done
[ -f "$dir/placement.txt" ] || { echo "FAIL: no placement written"; exit 1; }
# Every site written is a candidate the operations reached (so the engine can load it).
candidates=$(printf '%s\n' "$out" | sed -n 's/^candidate sites in code-path order: //p' | tr -d ' ' | tr ',' '\n')
[ -n "$candidates" ] || { echo "FAIL: no candidate sites listed"; failures=$((failures + 1)); }
for site in $(grep -v '^#' "$dir/placement.txt" | awk 'NF {print $1}'); do
  printf '%s\n' "$candidates" | grep -qx "$site" ||
    { echo "FAIL: placement site $site is not a candidate"; failures=$((failures + 1)); }
done
rm -rf "$dir"
[ "$failures" -eq 0 ] && echo "all passed" && exit 0
exit 1
