# Checks that every quoted #include goes downward in the module graph (the libraries of the
# top-level CMakeLists.txt; docs/design/overview.md describes the layers):
#
#   common <- threads <- steps
#   threads <- io (sm/io) <- log <- core (sm/page, sm/buffer, sm/lock, ...) <- index
#   index <- apiimpl (sm/api, the public API's implementation) <- api (sm/sm.h alone)
#   api <- query, tpcc (which may include sm/sm.h but not sm/api/);  steps <- apiimpl, tpcc;
#   query <- tpcc
#   io <- testing (sm/io/testing: test support, for tests/ and tools/bench only)
#   tools/ (offline tools) include nothing of the engine; tools/admin (the database admin
#   command) goes through the public API and the layers below it; tools/icache (the STEPS
#   measurement harness, a benchmark run under valgrind) goes through the public API and the
#   fiber primitives; its callgrind runner and reader and its runs of the tpcc binary under
#   callgrind (tools/icache/callgrind_parts.h and tpcc_runs.h, module callgrind) include
#   nothing of the engine, and any tool may use them; tools/bench and tests/
#   may include all. examples/ (applications built against the installed or embedded library)
#   include sm/sm.h alone.
#
# Quoted includes must name a path from the repository root ("threads/fiber.h").
# Usage: cmake -DROOT=<repo> -DSTAMP=<file> -P check_layering.cmake
cmake_minimum_required(VERSION 3.25)

function(module_of path out)
  if(path MATCHES "^sm/common/")
    set(m common)
  elseif(path MATCHES "^sm/io/testing/")
    set(m testing)
  elseif(path MATCHES "^sm/io/")
    set(m io)
  elseif(path MATCHES "^sm/sm\\.h$")
    set(m api)
  elseif(path MATCHES "^sm/api/")
    set(m apiimpl)
  elseif(path MATCHES "^sm/")
    set(m core)
  elseif(path MATCHES "^tools/bench/")
    set(m bench)
  elseif(path MATCHES "^tools/admin/")
    set(m admin)
  elseif(path MATCHES "^tools/icache/(callgrind_parts|tpcc_runs)\\.h$")
    set(m callgrind)
  elseif(path MATCHES "^tools/icache/")
    set(m icache)
  elseif(path MATCHES "^(threads|steps|log|index|query|tpcc|tools|tests|examples)/")
    string(REGEX REPLACE "/.*" "" m "${path}")
  else()
    set(m "")
  endif()
  set(${out} "${m}" PARENT_SCOPE)
endfunction()

set(allowed_common common)
set(allowed_threads common threads)
set(allowed_steps common threads steps)
set(allowed_io common threads io)
set(allowed_testing common threads io testing)
set(allowed_log common threads io log)
set(allowed_core common threads io log core)
set(allowed_index common threads io log core index)
set(allowed_api common api)
set(allowed_apiimpl common threads io log core index steps api apiimpl)
set(allowed_query common api query)
set(allowed_tpcc common api steps query tpcc)
set(allowed_tools tools)
set(allowed_admin common threads io log core index api apiimpl admin)
set(allowed_callgrind callgrind)
set(allowed_icache common threads steps api bench callgrind icache)
set(allowed_bench common threads io testing steps log core index api apiimpl query tpcc callgrind
    bench)
set(allowed_examples api)
set(allowed_tests common threads io testing steps log core index api apiimpl query tpcc bench
    admin callgrind icache tests)

file(GLOB_RECURSE files RELATIVE ${ROOT}
  ${ROOT}/sm/*.h ${ROOT}/sm/*.cc ${ROOT}/threads/*.h ${ROOT}/threads/*.cc
  ${ROOT}/steps/*.h ${ROOT}/steps/*.cc ${ROOT}/log/*.h ${ROOT}/log/*.cc
  ${ROOT}/index/*.h ${ROOT}/index/*.cc ${ROOT}/query/*.h ${ROOT}/query/*.cc
  ${ROOT}/tpcc/*.h ${ROOT}/tpcc/*.cc ${ROOT}/tools/*.h ${ROOT}/tools/*.cc
  ${ROOT}/tests/*.h ${ROOT}/tests/*.cc ${ROOT}/examples/*.h ${ROOT}/examples/*.cc)
set(errors "")
foreach(f IN LISTS files)
  module_of("${f}" from)
  file(STRINGS ${ROOT}/${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]+\"")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]+\"([^\"]+)\".*" "\\1" inc "${line}")
    module_of("${inc}" to)
    if(to STREQUAL "")
      string(APPEND errors "  ${f}: \"${inc}\" is not a path from the repository root\n")
    elseif(NOT to IN_LIST allowed_${from})
      string(APPEND errors "  ${f}: ${from} may not include ${to} (\"${inc}\")\n")
    endif()
  endforeach()
endforeach()
if(errors)
  message(FATAL_ERROR "Layering violations:\n${errors}")
endif()
file(WRITE ${STAMP} "ok\n")
