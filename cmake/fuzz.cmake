# The libFuzzer harnesses of tests/fuzz, one per file reader. They need clang
# (libFuzzer is clang's), so they are their own CMake project, configured
# and built by this one (ExternalProject) against its layer libraries:
#   TESSERA_FUZZ=AUTO (default)  build them when a clang++ that links
#                                -fsanitize=fuzzer is found, in a build that
#                                is not a sanitizer build
#   TESSERA_FUZZ=ON / OFF        always (an error without clang) / never
# `make test` runs each for a few seconds, `make fuzz` for as long as asked.
set(TESSERA_FUZZ AUTO CACHE STRING "Build the libFuzzer harnesses: AUTO, ON, OFF")
set_property(CACHE TESSERA_FUZZ PROPERTY STRINGS AUTO ON OFF)
set(TESSERA_FUZZ_ENABLED OFF)
if(NOT TESSERA_FUZZ STREQUAL "OFF")
  set(why "")
  if(TESSERA_SANITIZE)
    # Their ASan runtime is clang's; a GCC sanitizer build would bring a second one.
    set(why "a TESSERA_SANITIZE build")
  else()
    find_program(TESSERA_FUZZ_CXX NAMES clang++ clang++-16 clang++-15 clang++-14
                 DOC "clang++ for the fuzz harnesses")
    if(NOT TESSERA_FUZZ_CXX)
      set(why "no clang++ (Debian: clang, libclang-rt-14-dev)")
    else()
      # libFuzzer comes with clang's runtime libraries, packaged apart.
      set(probe ${PROJECT_BINARY_DIR}/CMakeFiles/fuzz_probe.cc)
      file(WRITE ${probe}
           "extern \"C\" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n")
      execute_process(COMMAND ${TESSERA_FUZZ_CXX} -fsanitize=fuzzer,address,undefined ${probe}
                              -o ${PROJECT_BINARY_DIR}/CMakeFiles/fuzz_probe
                      RESULT_VARIABLE probe_rc OUTPUT_QUIET ERROR_QUIET)
      if(NOT probe_rc EQUAL 0)
        set(why "${TESSERA_FUZZ_CXX} cannot link -fsanitize=fuzzer (Debian: libclang-rt-14-dev)")
      endif()
    endif()
  endif()
  if(why STREQUAL "")
    set(TESSERA_FUZZ_ENABLED ON)
  elseif(TESSERA_FUZZ STREQUAL "ON")
    message(FATAL_ERROR "TESSERA_FUZZ=ON but the harnesses cannot be built: ${why}")
  else()
    message(STATUS "Fuzz harnesses: not built (${why})")
  endif()
endif()

if(TESSERA_FUZZ_ENABLED)
  message(STATUS "Fuzz harnesses: built with ${TESSERA_FUZZ_CXX}")
  set(TESSERA_FUZZ_DIR ${PROJECT_BINARY_DIR}/fuzz)
  # What the harness project links: the layer libraries by path (it links
  # some whole, some not) and the system libraries behind them.
  set(config "set(TESSERA_SOURCE_DIR \"${PROJECT_SOURCE_DIR}\")\n")
  foreach(layer ${TESSERA_LAYERS})
    string(APPEND config "set(TESSERA_LIB_${layer} \"$<TARGET_LINKER_FILE:tessera_${layer}>\")\n")
  endforeach()
  set(system_libs ${OPENBLAS_LINK_LIBRARIES} ${DNNL_LIBRARY} ${ZLIB_LIBRARIES}
      ${OpenMP_CXX_LIBRARIES} ${CMAKE_THREAD_LIBS_INIT} ${CMAKE_DL_LIBS})
  if(TESSERA_WITH_CUDA)
    # The layer libraries hold CUDA objects (whole-linked kernels) that call
    # the runtime; nothing CUDA runs in a harness.
    list(APPEND system_libs "$<TARGET_LINKER_FILE:CUDA::cudart>")
  endif()
  string(APPEND config "set(TESSERA_FUZZ_SYSTEM_LIBS \"${system_libs}\")\n")
  string(APPEND config "set(TESSERA_FUZZ_INCLUDE_DIRS \"${DNNL_INCLUDE_DIR}\")\n")
  file(GENERATE OUTPUT ${TESSERA_FUZZ_DIR}-config.cmake CONTENT "${config}")

  set(layer_targets "")
  foreach(layer ${TESSERA_LAYERS})
    list(APPEND layer_targets tessera_${layer})
  endforeach()
  include(ExternalProject)
  ExternalProject_Add(fuzzers
    SOURCE_DIR ${PROJECT_SOURCE_DIR}/tests/fuzz
    BINARY_DIR ${TESSERA_FUZZ_DIR}
    CMAKE_ARGS -DCMAKE_CXX_COMPILER=${TESSERA_FUZZ_CXX}
               -DCMAKE_BUILD_TYPE=RelWithDebInfo
               -DCMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER}
               -DTESSERA_FUZZ_CONFIG=${TESSERA_FUZZ_DIR}-config.cmake
    BUILD_ALWAYS ON
    INSTALL_COMMAND ""
    DEPENDS ${layer_targets})
endif()
