# `cmake --install build --prefix P` lays out:
#   P/include/tinyformer/...                  the public headers (lib/CMakeLists.txt: TINYFORMER_PUBLIC_HEADERS)
#   P/lib/libtinyformer.a                     the library (lib/<multiarch> when P is /usr, as GNUInstallDirs says)
#   P/bin/tinyformer                          the app (with TINYFORMER_APP)
#   P/lib/cmake/tinyformer/                   tinyformerConfig.cmake, ...ConfigVersion.cmake, ...Targets.cmake:
#                                             find_package(tinyformer) -> target tinyformer::tinyformer
#   P/lib/pkgconfig/tinyformer.pc             for builds without CMake
include(CMakePackageConfigHelpers)

# The library never needs MPI. Built with MPI, the package also has the component mpi (the target tinyformer::mpi,
# data-parallel training, lib/CMakeLists.txt) and tinyformer-mpi.pc; only a program that asks for them needs MPI.
# What the library was built with is written into the generated files as text (no if(ON) in them).
set(TINYFORMER_CONFIG_MPI "set(_tinyformer_has_mpi FALSE)  # built without MPI: no component mpi")
if(TARGET tinyformer_mpi)
  set(TINYFORMER_CONFIG_MPI "set(_tinyformer_has_mpi TRUE)  # built with MPI ${MPI_C_VERSION}: the component mpi")
endif()

# A library built with libxsmm needs it at its users' link, before OpenBLAS (libxsmm.a calls sgemm_).
set(TINYFORMER_PC_LIBXSMM "")
set(TINYFORMER_CONFIG_LIBXSMM "# Built without libxsmm.")
if(LIBXSMM_FOUND)
  set(TINYFORMER_PC_LIBXSMM "libxsmm ")
  set(TINYFORMER_CONFIG_LIBXSMM "# Built with libxsmm (float products): Debian's static libxsmm, through pkg-config, as \
the library was built.
find_dependency(PkgConfig)
pkg_check_modules(LIBXSMM REQUIRED IMPORTED_TARGET libxsmm)")
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
if(TARGET tinyformer_mpi)
  install(TARGETS tinyformer_mpi EXPORT tinyformerMpiTargets OBJECTS DESTINATION ${CMAKE_INSTALL_LIBDIR}/tinyformer-mpi)
  install(EXPORT tinyformerMpiTargets NAMESPACE tinyformer:: DESTINATION ${TINYFORMER_CMAKE_DIR})
  install(TARGETS tinyformer_mpi_archive ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
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
if(TARGET tinyformer_mpi)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/tinyformer-mpi.pc.in ${PROJECT_BINARY_DIR}/cmake/tinyformer-mpi.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/cmake/tinyformer-mpi.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()
