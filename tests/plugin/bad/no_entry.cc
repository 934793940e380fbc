// A shared library that is not an operator plugin: no TESSERA_OP_PLUGIN().
extern "C" int tessera_test_not_a_plugin() {
  return 1;
}
