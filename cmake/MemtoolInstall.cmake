# What `cmake --install` puts under the prefix, and the Debian package CPack makes of it:
#   bin/memtool, lib/libmemtool.so                        component runtime (what the wheel carries)
#   share/man/man1/memtool.1, memtool-VERB.1 (generated)  component doc
#   share/doc/memtool/README.md, docs/*.md                component doc
# libmemtool.so goes to lib/ (not a multiarch folder): memtool finds it as ../lib/libmemtool.so
# from its own executable (tools/memtool/detail/preload_run.cpp), wherever the prefix is.
if(TARGET memtool)
  install(TARGETS memtool RUNTIME DESTINATION bin COMPONENT runtime)
  install(DIRECTORY ${MEMTOOL_MAN_DIR} DESTINATION share/man COMPONENT doc)
endif()
if(TARGET memtool_preload)
  install(TARGETS memtool_preload LIBRARY DESTINATION lib COMPONENT runtime)
endif()
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION share/doc/memtool COMPONENT doc)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION share/doc/memtool COMPONENT doc FILES_MATCHING PATTERN "*.md")

# `cpack -G DEB` (or `cmake --build build --target package`): memtool_VERSION_amd64.deb with
# everything above under /usr. The binaries need glibc 2.17 (2.34 without MEMTOOL_GLIBC_PINS) and
# nothing else (compat/, packaging/README.md).
set(CPACK_PACKAGE_NAME memtool)
set(CPACK_PACKAGE_VENDOR "memtool")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "record, analyse and shrink the GPU memory of repetitive CUDA programs")
string(CONCAT CPACK_PACKAGE_DESCRIPTION
  "memtool preloads libmemtool.so into an unmodified CUDA program, records every buffer's lifetime, finds the "
  "training step and serves it from a planned pool or swaps idle buffers to the host; memtool report, plan, "
  "simulate and export analyse the traces; memtool doctor says what a machine allows.")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "memtool maintainers")
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
if(MEMTOOL_GLIBC_PINS)
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= 2.17)")
else()
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= 2.34)")
endif()
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "nvidia-driver")
set(CPACK_STRIP_FILES ON)  # the debug sections stay in the build tree
include(CPack)
