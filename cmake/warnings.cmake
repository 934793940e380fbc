# Warnings and sanitizers applied to every project target.
function(tessera_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
endfunction()

# Invariant checks (TS_DCHECK in engine/base/error.h): on in Debug and
# sanitizer builds, compiled out in the others.
add_compile_definitions($<$<CONFIG:Debug>:TESSERA_DCHECK=1>)
if(TESSERA_SANITIZE)
  add_compile_definitions(TESSERA_DCHECK=1)
endif()

if(TESSERA_SANITIZE STREQUAL "address")
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-sanitize-recover=undefined>)
  add_link_options(-fsanitize=address,undefined)
elseif(TESSERA_SANITIZE STREQUAL "thread")
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=thread>)
  add_link_options(-fsanitize=thread)
elseif(NOT TESSERA_SANITIZE STREQUAL "")
  message(FATAL_ERROR "TESSERA_SANITIZE must be empty, 'address' or 'thread', not '${TESSERA_SANITIZE}'")
endif()
