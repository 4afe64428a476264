# Install and export: `cmake --install build --prefix P` puts the public headers (sm/sm.h and
# the sm/common/ headers it includes) and the static libraries under P, with a package config
# and a version file, so that an application can `find_package(sm 0.1)` and link `sm::sm`.
# The public types have one layout in every build mode (sm/common/status.h, invariant 4), so
# the package carries no build-mode define and an application may be built in another mode.
set(SM_INSTALLED_LIBS sm sm_index sm_core sm_log sm_io sm_steps sm_threads sm_common)
install(TARGETS ${SM_INSTALLED_LIBS} EXPORT smTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES sm/sm.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/sm)
install(FILES sm/common/status.h sm/common/key_encoding.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/sm/common)
install(EXPORT smTargets NAMESPACE sm:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/sm)
include(CMakePackageConfigHelpers)
configure_package_config_file(cmake/smConfig.cmake.in ${PROJECT_BINARY_DIR}/smConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/sm)
# 0.x: a minor version may change the API, so find_package(sm 0.1) accepts 0.1.y only.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/smConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/smConfig.cmake ${PROJECT_BINARY_DIR}/smConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/sm)
