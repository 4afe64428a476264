#!/bin/sh
# The README's example program is tests/api/example_program.cc, which api.example_program
# builds and runs: the code block between the README's markers
#   <!-- example_program.cc:begin -->  and  <!-- example_program.cc:end -->
# (its ``` fence lines left out) must equal the file, so that the two cannot drift apart.
#   readme_example_test.sh README.md tests/api/example_program.cc
set -u
readme="$1"
program="$2"
begin='<!-- example_program.cc:begin -->'
end='<!-- example_program.cc:end -->'
if [ "$(grep -cxF "$begin" "$readme")" != 1 ] || [ "$(grep -cxF "$end" "$readme")" != 1 ]; then
  echo "$readme: want one line '$begin' and one line '$end'" >&2
  exit 1
fi
awk -v begin="$begin" -v end="$end" '
  $0 == end { inside = 0 }
  inside && !/^```/ { print }
  $0 == begin { inside = 1 }
' "$readme" | diff -u "$program" - && exit 0
echo "the README's example differs from $program (- the file, + the README): copy one to the other" >&2
exit 1
