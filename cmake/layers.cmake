# One static library per layer of tools/layers/layers.txt (the table the
# include check reads too): tessera_<layer>, built from the .cc files of the
# layer's folders (and its .cu files in a CUDA build; *_cuda.cc only then),
# linking the layers the table lets it include and nothing else.
#
# Operators and the engine register themselves from static initialisers, so
# every layer is linked whole (WHOLE_ARCHIVE) wherever it is linked: no
# registration is dropped, and the feature is the same at every use (CMake
# refuses a library linked whole in one place and plainly in another).
#
# The layers are then linked, once, into the one shared runtime library,
# libtessera.so (target tessera_runtime), which the tests, the benchmarks and
# the tools link. Linked statically into each of them, the runtime (its CUDA
# kernels and debug information) came to about 290 MB per executable and
# 15 GB per build tree. The shell alone takes the layers' objects into its
# own binary (tessera_link_runtime_objects): a call from the Lua binding into
# the runtime then costs no PLT jump, which was 6% of a one-element
# `c = a + b` from Lua.
set(TESSERA_LAYER_TABLE ${PROJECT_SOURCE_DIR}/tools/layers/layers.txt)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${TESSERA_LAYER_TABLE})
file(STRINGS ${TESSERA_LAYER_TABLE} tessera_layer_lines)
# The operator libraries' static initialisers (their registrations) run when
# the registry is first used, not at start-up: tools/build/defer_static_init.sh
# moves them out of .init_array as each object is compiled, and
# engine/op/deferred_init.cc runs them. Start-up then skips building ~400
# operators' attribute tables that `tessera -e ''` and a waiting prompt never
# read (docs/DEVELOPING.md, "Writing an operator").
find_program(TESSERA_OBJCOPY NAMES ${CMAKE_OBJCOPY} objcopy REQUIRED)
function(tessera_defer_static_init target)
  set(launcher sh ${PROJECT_SOURCE_DIR}/tools/build/defer_static_init.sh ${TESSERA_OBJCOPY})
  foreach(lang CXX CUDA)
    set(chain ${launcher} ${CMAKE_${lang}_COMPILER_LAUNCHER})  # after ccache, if any
    set_target_properties(${target} PROPERTIES ${lang}_COMPILER_LAUNCHER "${chain}")
  endforeach()
endfunction()

set(TESSERA_LAYERS "")
foreach(line ${tessera_layer_lines})
  string(REGEX REPLACE "#.*" "" line "${line}")
  if(NOT line MATCHES "->")
    continue()
  endif()
  string(REGEX REPLACE "->.*" "" left "${line}")
  string(REGEX REPLACE ".*->" "" right "${line}")
  separate_arguments(left UNIX_COMMAND "${left}")
  separate_arguments(right UNIX_COMMAND "${right}")
  list(POP_FRONT left name)
  if(right STREQUAL "*")  # the executable's layer: built by its own CMakeLists
    continue()
  endif()
  set(sources "")
  foreach(folder ${left})
    file(GLOB cc CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${folder}/*.cc)
    if(TESSERA_WITH_CUDA)
      file(GLOB cu CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${folder}/*.cu)
    else()
      list(FILTER cc EXCLUDE REGEX "_cuda\\.cc$")
      set(cu "")
    endif()
    list(APPEND sources ${cc} ${cu})
  endforeach()
  add_library(tessera_${name} STATIC ${sources})
  set_target_properties(tessera_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  # Calls between the runtime's own functions bind inside the library (no
  # PLT, and inlining across them), as they did when it was linked statically.
  # Thread-locals (the engine's per-thread state, the object pools' caches)
  # are read on every op: the initial-exec model reads them at a fixed
  # offset, where the default model for a shared library calls
  # __tls_get_addr each time. It holds because libtessera.so is linked, so
  # loaded at start-up (docs/DEVELOPING.md, "Layers").
  target_compile_options(tessera_${name} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-fno-semantic-interposition -ftls-model=initial-exec>)
  foreach(dep ${right})
    target_link_libraries(tessera_${name} PUBLIC "$<LINK_LIBRARY:WHOLE_ARCHIVE,tessera_${dep}>")
  endforeach()
  tessera_cuda_target(tessera_${name})
  tessera_warnings(tessera_${name})
  if(left MATCHES "^ops/")
    tessera_defer_static_init(tessera_${name})
  endif()
  list(APPEND TESSERA_LAYERS ${name})
endforeach()

# Every layer, for executables and tests: tessera_link_runtime(target).
# libtessera.so is built from the layers' objects (linking the archives whole
# would bring some twice, once per layer that depends on them). Only it holds
# them: one registry, one engine per process. The libraries the layers call
# are linked to it below, in the top CMakeLists.txt and in blas.cmake.
set(TESSERA_RUNTIME_OBJECTS "")
foreach(name ${TESSERA_LAYERS})
  list(APPEND TESSERA_RUNTIME_OBJECTS $<TARGET_OBJECTS:tessera_${name}>)
endforeach()
# What the layers' objects need wherever they are linked (ZLIB, OpenBLAS,
# oneDNN and the OpenMP wait policy are added by the top CMakeLists.txt and
# blas.cmake).
add_library(tessera_runtime_deps INTERFACE)
target_link_libraries(tessera_runtime_deps INTERFACE tessera_base_deps)
add_library(tessera_runtime SHARED ${TESSERA_RUNTIME_OBJECTS})
set_target_properties(tessera_runtime PROPERTIES OUTPUT_NAME tessera LINKER_LANGUAGE CXX)
target_link_libraries(tessera_runtime PUBLIC tessera_runtime_deps)
target_link_options(tessera_runtime PRIVATE -Wl,-Bsymbolic-functions)
if(NOT TESSERA_SANITIZE)
  # Every symbol the layers use is found at link time, not when a user runs.
  target_link_options(tessera_runtime PRIVATE -Wl,--no-undefined)
endif()
tessera_cuda_target(tessera_runtime)
function(tessera_link_runtime target)
  target_link_libraries(${target} PRIVATE tessera_runtime)
endfunction()
# The runtime inside `target` itself (the shell): every layer's objects, so no
# registration is dropped, and what they need. `target` must export its
# symbols (ENABLE_EXPORTS) for C++ operator plugins to resolve against it.
function(tessera_link_runtime_objects target)
  target_sources(${target} PRIVATE ${TESSERA_RUNTIME_OBJECTS})
  target_link_libraries(${target} PRIVATE tessera_runtime_deps)
  tessera_cuda_target(${target})
endfunction()
