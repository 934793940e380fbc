#include "engine/op/op_attr_types.h"
#include "engine/scheduler/engine.h"

namespace tessera::op {

using engine::Engine;

OpStatePtr::Holder::Holder(std::shared_ptr<void> s)
    : state(std::move(s)), var(Engine::Get()->NewVariable()) {}

OpStatePtr::Holder::~Holder() {
  // The state must outlive every op pushed on it: hand it to the deletion.
  Engine::Get()->DeleteVariable([s = std::move(state)](RunContext) {}, Context::CPU(), var);
}

}  // namespace tessera::op
