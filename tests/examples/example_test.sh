#!/bin/sh
# Builds and runs an application of examples/ from scratch, as a user following the README
# would, in SCRATCH (emptied first).
#   example_test.sh find_package SOURCE_DIR BUILD_DIR BUILD_TYPE SCRATCH
#     installs BUILD_DIR (a build of type BUILD_TYPE) into a prefix, checks that no test
#     support was installed and that the version file refuses find_package(sm 0.2), then builds
#     examples/find_package against it in the other build mode (Debug with SM_DEBUG against an
#     optimized library, Release against a Debug one) and runs it.
#   example_test.sh add_subdirectory SOURCE_DIR SCRATCH
#     configures examples/add_subdirectory with the packages only the tests, tools and driver
#     use disabled, builds it in Debug and runs it twice.
set -eu
mode="$1"
src="$2"

# run_app BINARY DB PATTERN: the application succeeds and prints PATTERN.
run_app() {
  out=$("$1" "$2") || { printf '%s\n' "$out"; echo "FAIL: $1 $2 exited non-zero"; exit 1; }
  printf '%s\n' "$out"
  printf '%s\n' "$out" | grep -q -- "$3" || { echo "FAIL: no '$3' in the output"; exit 1; }
}

case "$mode" in
find_package)
  build="$3"; build_type="$4"; dir="$5"
  rm -rf "$dir" && mkdir -p "$dir"
  cmake --install "$build" --prefix "$dir/prefix" >/dev/null
  if find "$dir/prefix" -name '*.a' -exec nm -C --defined-only {} + | grep -q FaultInjection ||
     find "$dir/prefix" -path '*testing*' | grep -q .; then
    echo "FAIL: test support was installed"; exit 1
  fi
  # A version the package does not provide is refused by its version file.
  mkdir -p "$dir/newer"
  printf '%s\n' 'cmake_minimum_required(VERSION 3.25)' 'project(newer LANGUAGES NONE)' \
    'find_package(sm 0.2 QUIET)' 'if(sm_FOUND)' '  message(FATAL_ERROR "sm 0.2 found")' \
    'endif()' 'message(STATUS "considered: ${sm_CONSIDERED_VERSIONS}")' \
    > "$dir/newer/CMakeLists.txt"
  cmake -S "$dir/newer" -B "$dir/newer/build" -DCMAKE_PREFIX_PATH="$dir/prefix" |
    grep -q "considered: 0\.1\." || { echo "FAIL: find_package(sm 0.2) not refused"; exit 1; }
  if [ "$build_type" = Debug ]; then
    set -- -DCMAKE_BUILD_TYPE=Release
  else
    set -- -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS=-DSM_DEBUG=1
  fi
  echo "library: $build_type; application: $*"
  cmake -S "$src/examples/find_package" -B "$dir/build" -G Ninja \
    -DCMAKE_PREFIX_PATH="$dir/prefix" "$@" >/dev/null
  cmake --build "$dir/build" >/dev/null
  run_app "$dir/build/inventory" "$dir/db" "warehouse 2: bolt 12"
  ;;
add_subdirectory)
  dir="$3"
  rm -rf "$dir" && mkdir -p "$dir"
  cmake -S "$src/examples/add_subdirectory" -B "$dir/build" -G Ninja --no-warn-unused-cli \
    -DSM_SOURCE_DIR="$src" \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_DISABLE_FIND_PACKAGE_Catch2=ON \
    -DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON \
    -DCMAKE_DISABLE_FIND_PACKAGE_OpenSSL=ON -DCMAKE_DISABLE_FIND_PACKAGE_SQLite3=ON >/dev/null
  cmake --build "$dir/build" >/dev/null
  run_app "$dir/build/counter" "$dir/db" "runs: 1"
  run_app "$dir/build/counter" "$dir/db" "runs: 2"
  rm -rf "$dir"  # a second build of the library: kept only when the test fails
  ;;
*)
  echo "usage: $0 find_package|add_subdirectory ..."; exit 2
  ;;
esac
echo "ok: $mode"
