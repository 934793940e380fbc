#!/bin/sh
# Compiler launcher for the operator libraries (ops/): runs the compile, then
# renames the object's .init_array section to tessera_deferred_init, so that
# its static initialisers (the operator registrations) do not run when the
# program starts but when the registry is first used
# (engine/op/deferred_init.cc runs them). A start-up that never looks up an
# operator, `tessera -e ''` or a prompt waiting for its first line, skips
# them. Initialisers with a priority (.init_array.NNNNN: TS_INIT_AT_START)
# keep running at start-up.
#   defer_static_init.sh OBJCOPY COMPILER ARGS...
set -eu
objcopy=$1
shift
"$@"
out=
prev=
for arg in "$@"; do
  if [ "$prev" = "-o" ]; then out=$arg; fi
  prev=$arg
done
case "$out" in
  *.o) "$objcopy" --rename-section .init_array=tessera_deferred_init,alloc,load,data,contents "$out" ;;
esac
