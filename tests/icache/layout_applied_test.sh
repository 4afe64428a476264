#!/bin/sh
# The linker laid out the binary as the layout file says: the first 100 functions the file lists
# that the binary defines lie at ascending addresses, in the file's order (the linker's own
# order would interleave them with the rest).
#   layout_applied_test.sh LAYOUT_FILE BINARY
set -u
layout="$1"
binary="$2"
symbols=$(mktemp) || exit 1
trap 'rm -f "$symbols"' EXIT
nm --defined-only "$binary" | awk '$2 ~ /^[tTwW]$/ { print $3, $1 }' | sort > "$symbols"
listed=$(grep -v '^#' "$layout" | sed 's/^\.text\.//' | head -400)
[ -n "$listed" ] || { echo "FAIL: $layout lists no functions"; exit 1; }
found=0
last=""
last_name=""
for name in $listed; do
  address=$(grep -m1 "^$name " "$symbols" | cut -d' ' -f2)
  [ -n "$address" ] || continue
  if [ -n "$last" ] && [ "$(printf '%s\n%s\n' "$last" "$address" | sort | head -1)" != "$last" ]; then
    echo "FAIL: $name (at $address) lies before $last_name (at $last), which the file lists first"
    exit 1
  fi
  last="$address"
  last_name="$name"
  found=$((found + 1))
  [ "$found" -ge 100 ] && break
done
[ "$found" -ge 50 ] || { echo "FAIL: only $found of the listed functions are in $binary"; exit 1; }
echo "the first $found listed functions lie in the listed order"
