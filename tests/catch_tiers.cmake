# Registers the test cases of one Catch2 binary with ctest, one ctest test per case, labelled by
# the case's tier tags. Run after every link of the binary (sm_discover_tiered_tests in
# tests/CMakeLists.txt), like Catch2's own catch_discover_tests, whose name escaping it follows.
#
# Tiers (the labels): [unit] -> unit, [random] -> random, [crash] -> crash, hidden [.slow] ->
# slow. A case may carry several. The cases registered are the visible ones and the [.slow] ones;
# other hidden cases ([.], run by hand) are not. A registered case with no tier tag fails the
# build. A slow case runs only with SM_SLOW_TESTS set in the environment (tools/run test --slow
# or --label slow set it); otherwise ctest reports it as skipped, so a plain `ctest` does not
# run it.
#
# Usage: cmake -DTEST_EXECUTABLE=<binary> -DTEST_WORKING_DIR=<dir> -DTEST_TIMEOUT=<s>
#              -DSLOW_TIMEOUT=<s> -DCTEST_FILE=<output> -P catch_tiers.cmake
cmake_minimum_required(VERSION 3.25)

set(script "")

# Appends NAME(ARGS) to the script, each argument quoted as a bracket argument where needed
# (ARGV<n>, not ARGN: an argument that is a list, such as the labels, stays one argument).
function(add_command name)
  set(args "")
  math(EXPR last "${ARGC} - 1")
  foreach(n RANGE 1 ${last})
    set(arg "${ARGV${n}}")
    if(arg MATCHES "[^-./:a-zA-Z0-9_]")
      string(APPEND args " [==[${arg}]==]")
    else()
      string(APPEND args " ${arg}")
    endif()
  endforeach()
  set(script "${script}${name}(${args})\n" PARENT_SCOPE)
endfunction()

# The names of the cases that match the Catch2 test spec `spec` (empty: the visible cases).
function(list_cases spec out)
  execute_process(
    COMMAND "${TEST_EXECUTABLE}" ${spec} --list-test-names-only
    OUTPUT_VARIABLE output
    RESULT_VARIABLE result
    WORKING_DIRECTORY "${TEST_WORKING_DIR}")
  # Catch2 exits with the number of cases listed; a negative or non-numeric result is a failure
  # to run at all.
  if(NOT result MATCHES "^[0-9]+$")
    message(FATAL_ERROR "${TEST_EXECUTABLE} ${spec} --list-test-names-only: ${result}\n${output}")
  endif()
  string(REPLACE "\n" ";" lines "${output}")
  list(FILTER lines EXCLUDE REGEX "^$")
  set(${out} "${lines}" PARENT_SCOPE)
endfunction()

list_cases("" visible)
list_cases("[.slow]" slow)
set(tiers unit random crash)
foreach(tier IN LISTS tiers)
  list_cases("[${tier}]" cases_${tier})
endforeach()

set(registered ${visible} ${slow})
list(REMOVE_DUPLICATES registered)
foreach(name IN LISTS registered)
  set(labels "")
  foreach(tier IN LISTS tiers)
    if(name IN_LIST cases_${tier})
      list(APPEND labels ${tier})
    endif()
  endforeach()
  set(is_slow FALSE)
  if(name IN_LIST slow)
    set(is_slow TRUE)
    list(APPEND labels slow)
  endif()
  if(NOT labels)
    message(FATAL_ERROR "${TEST_EXECUTABLE}: test case \"${name}\" has no tier tag "
                        "([unit], [random], [crash] or [.slow])")
  endif()
  # Catch2 reads ',', '[' and ']' in a test spec as syntax.
  set(spec "${name}")
  foreach(char , [ ])
    string(REPLACE "${char}" "\\${char}" spec "${spec}")
  endforeach()
  if(is_slow)
    add_command(add_test "${name}" sh -c
                "[ -n \"\${SM_SLOW_TESTS:-}\" ] || { echo 'slow: runs with SM_SLOW_TESTS=1 (tools/run test --slow)'; exit 77; }; exec \"\$0\" \"\$1\""
                "${TEST_EXECUTABLE}" "${spec}")
    add_command(set_tests_properties "${name}" PROPERTIES WORKING_DIRECTORY "${TEST_WORKING_DIR}"
                LABELS "${labels}" TIMEOUT ${SLOW_TIMEOUT} SKIP_RETURN_CODE 77)
  else()
    add_command(add_test "${name}" "${TEST_EXECUTABLE}" "${spec}")
    # A case that cannot run in this build (an optional library missing) prints a line
    # starting "[engine skipped]" and returns: ctest reports it skipped, not passed.
    add_command(set_tests_properties "${name}" PROPERTIES WORKING_DIRECTORY "${TEST_WORKING_DIR}"
                LABELS "${labels}" TIMEOUT ${TEST_TIMEOUT}
                SKIP_REGULAR_EXPRESSION "\\[engine skipped\\]")
  endif()
endforeach()

file(WRITE "${CTEST_FILE}" "${script}")
