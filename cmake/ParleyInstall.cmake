# `cmake --install build --prefix P`: the header, libparley.so.N with ONNX Runtime beside it, the
# parley command, parley.pc and the CMake package (find_package(parley) -> parley::parley), the
# models of build/models in share/parley/models (where the installed library and command find them:
# src/models/model_locator.h) and the LICENSE in share/doc/parley.
include(CMakePackageConfigHelpers)

install(TARGETS parley EXPORT parleyTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT library)
install(FILES "${PROJECT_SOURCE_DIR}/include/parley/parley.h"
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/parley COMPONENT library)
# libparley finds ONNX Runtime through its RUNPATH ($ORIGIN), so it goes in the same folder.
install(DIRECTORY "${ONNXRUNTIME_LIBRARY_DIR}/" DESTINATION ${CMAKE_INSTALL_LIBDIR}
        COMPONENT library FILES_MATCHING PATTERN "libonnxruntime*.so*")
if(TARGET parley_cli)
  set_target_properties(parley_cli PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
  install(TARGETS parley_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT cli)
endif()

# The models scripts/prepare-models put in the build tree, copied (links followed) when the install
# runs, not when it is configured: they are prepared after the build.
install(CODE "set(PARLEY_MODELS_SOURCE \"${PROJECT_BINARY_DIR}/models\")
set(PARLEY_MODELS_DESTINATION \"${CMAKE_INSTALL_DATADIR}/parley/models\")" COMPONENT models)
install(SCRIPT "${PROJECT_SOURCE_DIR}/cmake/ParleyInstallModels.cmake" COMPONENT models)
install(FILES "${PROJECT_SOURCE_DIR}/LICENSE" DESTINATION ${CMAKE_INSTALL_DOCDIR}
        COMPONENT library)

set(PARLEY_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/parley)
install(EXPORT parleyTargets NAMESPACE parley:: DESTINATION ${PARLEY_CMAKE_DIR}
        COMPONENT library)
configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/parleyConfig.cmake.in"
                              "${PROJECT_BINARY_DIR}/parleyConfig.cmake"
                              INSTALL_DESTINATION ${PARLEY_CMAKE_DIR})
# The C ABI only changes with the SONAME, so any 0.x release satisfies a request for 0.y <= x.
write_basic_package_version_file("${PROJECT_BINARY_DIR}/parleyConfigVersion.cmake"
                                 COMPATIBILITY SameMajorVersion)
install(FILES "${PROJECT_BINARY_DIR}/parleyConfig.cmake"
              "${PROJECT_BINARY_DIR}/parleyConfigVersion.cmake"
        DESTINATION ${PARLEY_CMAKE_DIR} COMPONENT library)

# Relative to the .pc file, so that `cmake --install --prefix` anywhere gives a correct one.
file(RELATIVE_PATH PARLEY_PC_TO_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
configure_file("${PROJECT_SOURCE_DIR}/cmake/parley.pc.in" "${PROJECT_BINARY_DIR}/parley.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/parley.pc"
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT library)
