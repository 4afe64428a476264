#!/bin/sh
# code_layout's search: the checked-in order is the current one, one more is made from a
# profile of a few transactions, each is "linked" (copied: the test checks the mechanics, not
# the linker) and measured, and the chosen one's file is written. A relink command without its
# placeholders, and a search without one, are refused first.
#   layout_search_test.sh CODE_LAYOUT TPCC_BINARY CHECKED_IN_LAYOUT SCRATCH_DIR
set -u
layout_tool="$1"
tpcc="$2"
current="$3"
dir="$4"
rm -rf "$dir" && mkdir -p "$dir" || exit 1
failures=0
bad=$("$layout_tool" --tpcc "$tpcc" --tpcc-db "$dir/tpcc-1w" --current "$current" \
  --relink "true" --output "$dir/searched.txt" 2>&1)
if [ $? -ne 2 ] || ! printf '%s' "$bad" | grep -q "{order} and {binary}"; then
  echo "FAIL: a relink command without placeholders was not refused: $bad"; failures=$((failures + 1))
fi
bad=$("$layout_tool" --tpcc "$tpcc" --tpcc-db "$dir/tpcc-1w" --cluster-bytes 8192,16384 \
  --output "$dir/searched.txt" 2>&1)
if [ $? -ne 2 ] || ! printf '%s' "$bad" | grep -q "needs --relink"; then
  echo "FAIL: a search without --relink was not refused: $bad"; failures=$((failures + 1))
fi
out=$("$layout_tool" --tpcc "$tpcc" --tpcc-db "$dir/tpcc-1w" --transactions 20 --warmup 10 \
  --current "$current" --cluster-bytes 16384 --work-dir "$dir/candidates" \
  --relink "test -s {order} && cp '$tpcc' {binary}" --output "$dir/searched.txt" 2>&1)
status=$?
printf '%s\n' "$out" | tail -5
json=$(printf '%s\n' "$out" | tail -1)
if [ "$status" -ne 0 ]; then
  echo "FAIL: code_layout's search exited $status"; failures=$((failures + 1))
elif [ "$(printf '%s' "$json" | grep -o '"sum":[0-9.]*[1-9]' | wc -l)" -ne 2 ]; then
  echo "FAIL: the search did not measure both candidates: $json"; failures=$((failures + 1))
elif [ -e "$dir/candidates/tpcc-1" ] || [ ! -s "$dir/candidates/order-1.txt" ]; then
  echo "FAIL: the candidate's binary was kept or its order lost"; failures=$((failures + 1))
elif printf '%s' "$json" | grep -q '"chosen":"current"'; then
  cmp -s "$current" "$dir/searched.txt" ||
    { echo "FAIL: the current order was chosen but not written"; failures=$((failures + 1)); }
else
  cmp -s "$dir/candidates/order-1.txt" "$dir/searched.txt" ||
    { echo "FAIL: the new order was chosen but not written"; failures=$((failures + 1)); }
fi
rm -rf "$dir"
[ "$failures" -eq 0 ] && echo "all passed" && exit 0
exit 1
