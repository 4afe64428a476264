# Adds the `check_layering` target, built with ALL: it re-runs check_layering.cmake whenever a
# source file changes, so an upward #include fails the build.
file(GLOB_RECURSE SM_LAYERED_SOURCES CONFIGURE_DEPENDS
  ${PROJECT_SOURCE_DIR}/sm/*.h ${PROJECT_SOURCE_DIR}/sm/*.cc
  ${PROJECT_SOURCE_DIR}/threads/*.h ${PROJECT_SOURCE_DIR}/threads/*.cc
  ${PROJECT_SOURCE_DIR}/steps/*.h ${PROJECT_SOURCE_DIR}/steps/*.cc
  ${PROJECT_SOURCE_DIR}/log/*.h ${PROJECT_SOURCE_DIR}/log/*.cc
  ${PROJECT_SOURCE_DIR}/index/*.h ${PROJECT_SOURCE_DIR}/index/*.cc
  ${PROJECT_SOURCE_DIR}/query/*.h ${PROJECT_SOURCE_DIR}/query/*.cc
  ${PROJECT_SOURCE_DIR}/tpcc/*.h ${PROJECT_SOURCE_DIR}/tpcc/*.cc
  ${PROJECT_SOURCE_DIR}/tools/*.h ${PROJECT_SOURCE_DIR}/tools/*.cc
  ${PROJECT_SOURCE_DIR}/tests/*.h ${PROJECT_SOURCE_DIR}/tests/*.cc
  ${PROJECT_SOURCE_DIR}/examples/*.h ${PROJECT_SOURCE_DIR}/examples/*.cc)
set(SM_LAYERING_STAMP ${PROJECT_BINARY_DIR}/layering.ok)
add_custom_command(
  OUTPUT ${SM_LAYERING_STAMP}
  COMMAND ${CMAKE_COMMAND} -DROOT=${PROJECT_SOURCE_DIR} -DSTAMP=${SM_LAYERING_STAMP}
          -P ${PROJECT_SOURCE_DIR}/cmake/check_layering.cmake
  DEPENDS ${SM_LAYERED_SOURCES} ${PROJECT_SOURCE_DIR}/cmake/check_layering.cmake
  COMMENT "Checking the include layering"
  VERBATIM)
add_custom_target(check_layering ALL DEPENDS ${SM_LAYERING_STAMP})
