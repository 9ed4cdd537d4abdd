# `cmake --install` exports kplConfig.cmake so that an HPC code can write
#   find_package(kpl 0.1 REQUIRED COMPONENTS core algorithms)
#   target_link_libraries(app PRIVATE kpl::core)
include(CMakePackageConfigHelpers)
set(KPL_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/kpl)

install(EXPORT kplTargets NAMESPACE kpl:: DESTINATION ${KPL_INSTALL_CMAKEDIR})
configure_package_config_file(cmake/kplConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/kplConfig.cmake
  INSTALL_DESTINATION ${KPL_INSTALL_CMAKEDIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/kplConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${CMAKE_CURRENT_BINARY_DIR}/kplConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/kplConfigVersion.cmake
  cmake/kplKokkosSources.cmake
  DESTINATION ${KPL_INSTALL_CMAKEDIR})
install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/kpl)
