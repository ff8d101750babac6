# `cmake --install build --prefix P` lays out:
#   P/include/tinyformer/...                  the public headers (lib/CMakeLists.txt: TINYFORMER_PUBLIC_HEADERS)
#   P/lib/libtinyformer.a                     the library (lib/<multiarch> when P is /usr, as GNUInstallDirs says)
#   P/bin/tinyformer                          the app (with TINYFORMER_APP)
#   P/lib/cmake/tinyformer/                   tinyformerConfig.cmake, ...ConfigVersion.cmake, ...Targets.cmake:
#                                             find_package(tinyformer) -> target tinyformer::tinyformer
#   P/lib/pkgconfig/tinyformer.pc             for builds without CMake
include(CMakePackageConfigHelpers)

# A library built with MPI (dist/dist_mpi.cpp) needs MPI at its users' link: ompi-c is OpenMPI's C module.
set(TINYFORMER_PC_MPI "")
set(TINYFORMER_WITH_MPI_PACKAGE OFF)
if(MPI_C_FOUND)
  set(TINYFORMER_PC_MPI " ompi-c")
  set(TINYFORMER_WITH_MPI_PACKAGE ON)
endif()

# A library built with libxsmm needs it at its users' link, before OpenBLAS (libxsmm.a calls sgemm_).
set(TINYFORMER_PC_LIBXSMM "")
set(TINYFORMER_WITH_LIBXSMM_PACKAGE OFF)
if(LIBXSMM_FOUND)
  set(TINYFORMER_PC_LIBXSMM "libxsmm ")
  set(TINYFORMER_WITH_LIBXSMM_PACKAGE ON)
endif()

foreach(header IN LISTS TINYFORMER_PUBLIC_HEADERS)
  get_filename_component(dir "${header}" DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/lib/${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/${dir})
endforeach()

install(TARGETS tinyformer EXPORT tinyformerTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(TINYFORMER_APP)
  install(TARGETS tinyformer_app RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

set(TINYFORMER_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tinyformer)
install(EXPORT tinyformerTargets NAMESPACE tinyformer:: DESTINATION ${TINYFORMER_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tinyformerConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/cmake/tinyformerConfig.cmake
                              INSTALL_DESTINATION ${TINYFORMER_CMAKE_DIR})
# 0.x: a minor version may change the API, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/tinyformerConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/tinyformerConfig.cmake
              ${PROJECT_BINARY_DIR}/cmake/tinyformerConfigVersion.cmake
        DESTINATION ${TINYFORMER_CMAKE_DIR})

# pkg-config: paths relative to the .pc file's own place, so the installed tree can be moved.
file(RELATIVE_PATH TINYFORMER_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
configure_file(${PROJECT_SOURCE_DIR}/cmake/tinyformer.pc.in ${PROJECT_BINARY_DIR}/cmake/tinyformer.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cmake/tinyformer.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
