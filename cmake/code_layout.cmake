# The profile-ordered code layout: every function in its own section (-ffunction-sections), and
# every binary linked by gold with tools/icache/code_layout.txt as its section order, so that
# the engine's hot functions lie together in the order tools/icache/code_layout chose
# (tools/icache/function_order.h says why). On by default in optimized builds; off in Debug
# and sanitizer builds, whose code is another, when gold is not there (then the build says so
# and links as usual), and by default in a subproject, whose application links on its own.
option(SM_CODE_LAYOUT "Lay out the hot functions in the order of SM_CODE_LAYOUT_FILE"
       ${PROJECT_IS_TOP_LEVEL})
set(SM_CODE_LAYOUT_FILE "${PROJECT_SOURCE_DIR}/tools/icache/code_layout.txt"
    CACHE FILEPATH "The section order the linker follows (tools/run layout writes one)")

set(SM_CODE_LAYOUT_ACTIVE OFF)
if(SM_CODE_LAYOUT AND SM_SANITIZE STREQUAL "" AND NOT CMAKE_BUILD_TYPE STREQUAL "Debug")
  include(CheckLinkerFlag)
  check_linker_flag(CXX "-fuse-ld=gold" SM_LINKER_GOLD_WORKS)
  if(NOT SM_LINKER_GOLD_WORKS)
    message(STATUS "Code layout: off (the gold linker, from binutils, does not link here)")
  elseif(NOT EXISTS "${SM_CODE_LAYOUT_FILE}")
    message(STATUS "Code layout: off (no ${SM_CODE_LAYOUT_FILE})")
  else()
    add_compile_options(-ffunction-sections)
    add_link_options(-fuse-ld=gold "LINKER:--section-ordering-file=${SM_CODE_LAYOUT_FILE}")
    set(SM_CODE_LAYOUT_ACTIVE ON)
    message(STATUS "Code layout: ${SM_CODE_LAYOUT_FILE}")
  endif()
endif()

# Relinks every executable under `dir` when the layout file changes (call after the
# add_subdirectory calls): the linker reads it, so the build does not know it otherwise.
function(sm_code_layout_link_depends dir)
  if(NOT SM_CODE_LAYOUT_ACTIVE)
    return()
  endif()
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "EXECUTABLE")
      set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS "${SM_CODE_LAYOUT_FILE}")
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(subdir IN LISTS subdirs)
    sm_code_layout_link_depends(${subdir})
  endforeach()
endfunction()
