# Adds the `check_layering` target, built with ALL: it re-runs check_layering.cmake whenever a
# source file changes, so an upward #include fails the build.
file(GLOB_RECURSE SM_LAYERED_SOURCES CONFIGURE_DEPENDS
  ${CMAKE_SOURCE_DIR}/sm/*.h ${CMAKE_SOURCE_DIR}/sm/*.cc
  ${CMAKE_SOURCE_DIR}/threads/*.h ${CMAKE_SOURCE_DIR}/threads/*.cc
  ${CMAKE_SOURCE_DIR}/steps/*.h ${CMAKE_SOURCE_DIR}/steps/*.cc
  ${CMAKE_SOURCE_DIR}/log/*.h ${CMAKE_SOURCE_DIR}/log/*.cc
  ${CMAKE_SOURCE_DIR}/index/*.h ${CMAKE_SOURCE_DIR}/index/*.cc
  ${CMAKE_SOURCE_DIR}/query/*.h ${CMAKE_SOURCE_DIR}/query/*.cc
  ${CMAKE_SOURCE_DIR}/tpcc/*.h ${CMAKE_SOURCE_DIR}/tpcc/*.cc
  ${CMAKE_SOURCE_DIR}/tools/*.h ${CMAKE_SOURCE_DIR}/tools/*.cc
  ${CMAKE_SOURCE_DIR}/tests/*.h ${CMAKE_SOURCE_DIR}/tests/*.cc)
set(SM_LAYERING_STAMP ${CMAKE_BINARY_DIR}/layering.ok)
add_custom_command(
  OUTPUT ${SM_LAYERING_STAMP}
  COMMAND ${CMAKE_COMMAND} -DROOT=${CMAKE_SOURCE_DIR} -DSTAMP=${SM_LAYERING_STAMP}
          -P ${CMAKE_SOURCE_DIR}/cmake/check_layering.cmake
  DEPENDS ${SM_LAYERED_SOURCES} ${CMAKE_SOURCE_DIR}/cmake/check_layering.cmake
  COMMENT "Checking the include layering"
  VERBATIM)
add_custom_target(check_layering ALL DEPENDS ${SM_LAYERING_STAMP})
