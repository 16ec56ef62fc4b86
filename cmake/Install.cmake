# `cmake --install build --prefix P` and `cpack -G DEB` (README): the ovfix binary, the
# libraries with their headers and CMake package (find_package(ovfix), docs/api.md):
# ovfix::ovfix, the shared libovfix.so behind the light header ovfix/ovfix.h, and
# ovfix::ovfix_static, libovfix.a behind ovfix/onnx.h (find_package(ovfix COMPONENTS
# static), which alone finds ONNX, protobuf, absl, re2 and OpenCL); the Python module
# (python/CMakeLists.txt), and the built-in rule files and targets. The libraries have those
# compiled in (rules/CMakeLists.txt); the installed copies are for reading and for starting
# custom rule files and targets from.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS ovfix RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS ovfix_api EXPORT ovfixStaticTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
if(OVFIX_SHARED_LIBRARY)
  install(TARGETS ovfix_shared EXPORT ovfixTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ovfix DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
set(OVFIX_RULES_INSTALL_DIR ${CMAKE_INSTALL_DATADIR}/ovfix)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/rules/builtin/ DESTINATION ${OVFIX_RULES_INSTALL_DIR}/rules)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/rules/targets/ DESTINATION ${OVFIX_RULES_INSTALL_DIR}/targets)

set(OVFIX_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/ovfix)
if(OVFIX_SHARED_LIBRARY)
  install(EXPORT ovfixTargets NAMESPACE ovfix:: DESTINATION ${OVFIX_CMAKE_INSTALL_DIR})
endif()
install(EXPORT ovfixStaticTargets NAMESPACE ovfix:: DESTINATION ${OVFIX_CMAKE_INSTALL_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ovfixConfig.cmake.in
  ${PROJECT_BINARY_DIR}/ovfixConfig.cmake INSTALL_DESTINATION ${OVFIX_CMAKE_INSTALL_DIR}
  PATH_VARS OVFIX_RULES_INSTALL_DIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ovfixConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ovfixConfig.cmake ${PROJECT_BINARY_DIR}/ovfixConfigVersion.cmake
  DESTINATION ${OVFIX_CMAKE_INSTALL_DIR})

# The Debian package: `cd build && cpack -G DEB`. The dependencies are the runtime packages
# of what ovfix and libovfix.so link plus the -dev packages find_package(ovfix COMPONENTS
# static) needs.
set(CPACK_PACKAGE_NAME ovfix)
set(CPACK_PACKAGE_VENDOR "ovfix")
set(CPACK_PACKAGE_CONTACT "ovfix maintainers <ovfix@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "Rewrites ONNX models to run correctly on GPU and fp16 backends (CLI, C++ library, Python)")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_PACKAGE_DEPENDS
  "libonnx1, libprotobuf32, libabsl20220623, libre2-9, ocl-icd-libopencl1, libstdc++6, libgcc-s1, libc6, libonnx-dev, libprotobuf-dev, libabsl-dev, libre2-dev, ocl-icd-opencl-dev, pkg-config, python3, python3-onnx, python3-numpy")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "pocl-opencl-icd")
include(CPack)
