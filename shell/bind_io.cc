// require 'tessera.io': the C++ half of mx.io.PrefetchingIter. A prefetcher
// userdata makes batches of in-memory arrays on a background thread (see
// engine/io/batch_prefetcher.h); shell/lua/mx/io.lua drives it.
//
//   local p = require('tessera.io').prefetcher({x, y}, depth)
//   p:start(rows, batch_size, last_pad)   -- rows: a list of 0-based row numbers
//   local arrays, pad = p:take()          -- nil at the end of the epoch
//
// The file readers behind MNISTIter and CSVIter (engine/io), which check
// every size against what the file holds before they allocate:
//
//   local bytes, dims = require('tessera.io').read_idx(path, 3, 'MNISTIter')
//   local rows = require('tessera.io').read_csv(path, 'CSVIter')  -- {{1, 2}, {3, 4}}
//
// and check_file(path, who), which readers of data files written in Lua
// call before opening one.
#include <sys/stat.h>
#include <lua.hpp>

#include <cerrno>

#include <memory>
#include <new>
#include <vector>

#include "bind_ndarray.h"
#include "bindings.h"
#include "engine/base/error.h"
#include "engine/base/regular_file.h"
#include "engine/io/batch_prefetcher.h"
#include "engine/io/csv_file.h"
#include "engine/io/idx_file.h"
#include "interpreter.h"
#include "lua_util.h"

namespace tessera::shell {
namespace {

using io::BatchPrefetcher;

constexpr const char* kPrefetcherMeta = "tessera.BatchPrefetcher";

struct PrefetcherBox {
  std::unique_ptr<BatchPrefetcher> p;
};

BatchPrefetcher& Check(lua_State* L) {
  auto* box = static_cast<PrefetcherBox*>(luaL_checkudata(L, 1, kPrefetcherMeta));
  if (!box->p) luaL_error(L, "prefetcher: already closed");
  return *box->p;
}

int New(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  const int depth = static_cast<int>(luaL_optinteger(L, 2, 2));
  std::vector<NDArray> sources;
  for (int i = 1, n = static_cast<int>(lua_objlen(L, 1)); i <= n; ++i) {
    lua_rawgeti(L, 1, i);
    sources.push_back(nd::CheckNDArray(L, -1, "prefetcher source"));
    lua_pop(L, 1);
  }
  Interpreter* in = Interpreter::Get();
  auto p =
      std::make_unique<BatchPrefetcher>(std::move(sources), depth, [in] { in->queue().Wake(); });
  auto* box = static_cast<PrefetcherBox*>(lua_newuserdata(L, sizeof(PrefetcherBox)));
  new (box) PrefetcherBox{std::move(p)};
  luaL_getmetatable(L, kPrefetcherMeta);
  lua_setmetatable(L, -2);
  return 1;
}

int Start(lua_State* L) {
  BatchPrefetcher& p = Check(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  const int64_t batch_size = luaL_checkinteger(L, 3);
  const int64_t last_pad = luaL_optinteger(L, 4, 0);
  const int n = static_cast<int>(lua_objlen(L, 2));
  std::vector<int64_t> rows(static_cast<size_t>(n));
  for (int i = 1; i <= n; ++i) {
    lua_rawgeti(L, 2, i);
    rows[static_cast<size_t>(i - 1)] = static_cast<int64_t>(lua_tonumber(L, -1));
    lua_pop(L, 1);
  }
  p.Start(std::move(rows), batch_size, last_pad);
  return 0;
}

int Take(lua_State* L) {
  BatchPrefetcher& p = Check(L);
  // The thread never waits for Lua, but the copies it pushes may queue behind
  // Lua work: serve the interpreter's queue meanwhile, as every wait does.
  if (!p.Ready()) Interpreter::Get()->ServeUntil(L, [&p] { return p.Ready(); });
  std::optional<io::Batch> batch = p.Take();
  if (!batch) return 0;
  lua_createtable(L, static_cast<int>(batch->arrays.size()), 0);
  for (size_t i = 0; i < batch->arrays.size(); ++i) {
    nd::PushNDArray(L, std::move(batch->arrays[i]));
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
  lua_pushinteger(L, static_cast<lua_Integer>(batch->pad));
  return 2;
}

// check_file(path, who) -> the size of the regular file `path`, or nil when
// nothing has that name; an error naming `who` for a path that is not a
// regular file (a FIFO would block the reader forever), cannot be opened,
// or holds a NUL byte.
int CheckFile(lua_State* L) {
  const std::string who = CheckString(L, 2, "check_file: who");
  const std::string path = CheckString(L, 1, who + ": the path");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) return 0;
  lua_pushnumber(L, static_cast<lua_Number>(CheckRegularFile(path, who)));
  return 1;
}

int NumBatches(lua_State* L) {
  lua_pushinteger(L, static_cast<lua_Integer>(Check(L).num_batches()));
  return 1;
}

int Close(lua_State* L) {
  auto* box = static_cast<PrefetcherBox*>(luaL_checkudata(L, 1, kPrefetcherMeta));
  box->p.reset();
  return 0;
}

// read_idx(path, ndim, who) -> the elements as a string of bytes, the dims.
int ReadIdx(lua_State* L) {
  const std::string who = luaL_optstring(L, 3, "read_idx");
  // CheckString keeps a NUL byte, which the reader refuses (luaL_checkstring
  // would cut the path there and read a different file).
  const io::IdxData d = io::ReadIdxFile(CheckString(L, 1, who + ": the path"),
                                        static_cast<int>(luaL_checkinteger(L, 2)), who);
  lua_pushlstring(L, reinterpret_cast<const char*>(d.bytes.data()), d.bytes.size());
  lua_createtable(L, static_cast<int>(d.dims.size()), 0);
  for (size_t i = 0; i < d.dims.size(); ++i) {
    lua_pushnumber(L, static_cast<lua_Number>(d.dims[i]));
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
  return 2;
}

// read_csv(path, who) -> a list of rows, each a list of numbers.
int ReadCsv(lua_State* L) {
  const std::string who = luaL_optstring(L, 2, "read_csv");
  const io::CsvRows r = io::ReadCsvFile(CheckString(L, 1, who + ": the path"), who);
  lua_createtable(L, static_cast<int>(r.row_sizes.size()), 0);
  size_t at = 0;
  for (size_t i = 0; i < r.row_sizes.size(); ++i) {
    lua_createtable(L, static_cast<int>(r.row_sizes[i]), 0);
    for (size_t j = 0; j < r.row_sizes[i]; ++j) {
      lua_pushnumber(L, r.values[at++]);
      lua_rawseti(L, -2, static_cast<int>(j + 1));
    }
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
  return 1;
}

void Open(lua_State* L, int) {
  luaL_newmetatable(L, kPrefetcherMeta);
  lua_pushvalue(L, -1);
  lua_setfield(L, -2, "__index");
  SetFunctions(L, -1,
               {{"start", Guarded<Start>, nullptr},
                {"take", Guarded<Take>, nullptr},
                {"num_batches", Guarded<NumBatches>, nullptr},
                {"close", Guarded<Close>, nullptr},
                {"__gc", Guarded<Close>, nullptr}});
  lua_pop(L, 1);

  lua_newtable(L);
  SetFunctions(L, -1,
               {{"prefetcher", Guarded<New>, nullptr},
                {"check_file", Guarded<CheckFile>, nullptr},
                {"read_idx", Guarded<ReadIdx>, nullptr},
                {"read_csv", Guarded<ReadCsv>, nullptr}});
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "loaded");
  lua_pushvalue(L, -3);
  lua_setfield(L, -2, "tessera.io");
  lua_pop(L, 3);
}

}  // namespace

TESSERA_SHELL_BINDING(io, 45, Open);

}  // namespace tessera::shell
