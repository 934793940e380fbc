# One static library per layer of tools/layers/layers.txt (the table the
# include check reads too): tessera_<layer>, built from the .cc files of the
# layer's folders (and its .cu files in a CUDA build; *_cuda.cc only then),
# linking the layers the table lets it include and nothing else.
#
# Operators and the engine register themselves from static initialisers, so
# every layer is linked whole (WHOLE_ARCHIVE) wherever it is linked: no
# registration is dropped, and the feature is the same at every use (CMake
# refuses a library linked whole in one place and plainly in another).
set(TESSERA_LAYER_TABLE ${PROJECT_SOURCE_DIR}/tools/layers/layers.txt)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${TESSERA_LAYER_TABLE})
file(STRINGS ${TESSERA_LAYER_TABLE} tessera_layer_lines)
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
  foreach(dep ${right})
    target_link_libraries(tessera_${name} PUBLIC "$<LINK_LIBRARY:WHOLE_ARCHIVE,tessera_${dep}>")
  endforeach()
  tessera_cuda_target(tessera_${name})
  tessera_warnings(tessera_${name})
  list(APPEND TESSERA_LAYERS ${name})
endforeach()

# Every layer, for executables and tests: tessera_link_whole(target).
add_library(tessera_runtime INTERFACE)
foreach(name ${TESSERA_LAYERS})
  target_link_libraries(tessera_runtime INTERFACE "$<LINK_LIBRARY:WHOLE_ARCHIVE,tessera_${name}>")
endforeach()
function(tessera_link_whole target)
  target_link_libraries(${target} PRIVATE tessera_runtime)
endfunction()
