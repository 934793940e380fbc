/* OpenMP threads that wait by spinning steal the cores the engine's workers
 * and the interpreter need: on two cores an MNIST MLP epoch ran several
 * times slower with libgomp's default (spin, then sleep) than with passive
 * waiting. libgomp reads OMP_WAIT_POLICY in its own constructor, before
 * main, so this tiny shared library sets the default from its constructor,
 * and executables list it right after libgomp (tessera_link_whole in
 * CMakeLists.txt): the dynamic loader then initialises it before libgomp.
 * A value the user exported wins. */
#include <stdlib.h>

__attribute__((constructor)) static void tessera_omp_wait_policy(void) {
  setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
}
