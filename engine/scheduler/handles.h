// The engine's handle types alone, for layers that hold variables without
// pushing work themselves (an op state's variable in the registry): they name
// a variable without seeing the Engine.
#pragma once

namespace tessera::engine {

class Var;
using VarHandle = Var*;
class Opr;
using OprHandle = Opr*;

}  // namespace tessera::engine
