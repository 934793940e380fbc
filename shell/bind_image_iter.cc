// The C++ half of mx.io.ImageRecordIter (shell/lua/mx/io.lua checks the
// user's options and passes them on here, already named as below; see
// engine/io/image_record_iter.h for the threads behind it):
//
//   local it = require('tessera.io').image_record_iter{path_imgrec = ..., batch_size = 64,
//     channels = 3, height = 224, width = 224, ...}
//   local data, label, pad, index = it:next()   -- nil at the end of the epoch
//   it:reset(); it:num_batches(); it:num_records(); it:skipped() -> count, first error
#include <lua.hpp>

#include <memory>
#include <new>
#include <string>
#include <utility>

#include "bind_ndarray.h"
#include "bindings.h"
#include "engine/base/error.h"
#include "engine/io/image_record_iter.h"
#include "interpreter.h"
#include "lua_util.h"

namespace tessera::shell {
namespace {

using io::ImageRecordIter;

constexpr const char* kMeta = "tessera.ImageRecordIter";

struct IterBox {
  std::unique_ptr<ImageRecordIter> it;
};

ImageRecordIter& Check(lua_State* L) {
  auto* box = static_cast<IterBox*>(luaL_checkudata(L, 1, kMeta));
  if (!box->it) luaL_error(L, "ImageRecordIter: already closed");
  return *box->it;
}

// Fields of the options table at index 1: a number (whole where `whole`),
// a boolean or a string, each with its default when absent.
double Number(lua_State* L, const char* key, double def, bool whole = true) {
  lua_getfield(L, 1, key);
  double v = def;
  if (!lua_isnil(L, -1)) {
    if (lua_type(L, -1) != LUA_TNUMBER)
      luaL_error(L, "ImageRecordIter: %s must be a number, got a %s", key, luaL_typename(L, -1));
    v = lua_tonumber(L, -1);
    if (whole && !(v == static_cast<double>(static_cast<int64_t>(v)) && v >= -(1LL << 53) &&
                   v <= (1LL << 53)))
      luaL_error(L, "ImageRecordIter: %s must be a whole number, got %f", key, v);
  }
  lua_pop(L, 1);
  return v;
}

int Int(lua_State* L, const char* key, int def) {
  const double v = Number(L, key, def);
  if (v < -2147483647.0 || v > 2147483647.0)
    luaL_error(L, "ImageRecordIter: %s is out of range, got %f", key, v);
  return static_cast<int>(v);
}

bool Bool(lua_State* L, const char* key, bool def) {
  lua_getfield(L, 1, key);
  bool v = def;
  if (!lua_isnil(L, -1)) {
    if (!lua_isboolean(L, -1))
      luaL_error(L, "ImageRecordIter: %s must be true or false, got a %s", key,
                 luaL_typename(L, -1));
    v = lua_toboolean(L, -1) != 0;
  }
  lua_pop(L, 1);
  return v;
}

std::string String(lua_State* L, const char* key) {
  lua_getfield(L, 1, key);
  std::string v;
  if (!lua_isnil(L, -1)) v = CheckString(L, -1, std::string("ImageRecordIter: ") + key);
  lua_pop(L, 1);
  return v;
}

io::AugmentParams ReadAugment(lua_State* L) {
  io::AugmentParams a;
  a.channels = Int(L, "channels", 3);
  a.height = Int(L, "height", 0);
  a.width = Int(L, "width", 0);
  a.resize = Int(L, "resize", -1);
  a.rand_crop = Bool(L, "rand_crop", false);
  a.random_resized_crop = Bool(L, "random_resized_crop", false);
  a.min_random_area = static_cast<float>(Number(L, "min_random_area", 1, false));
  a.max_random_area = static_cast<float>(Number(L, "max_random_area", 1, false));
  a.min_random_scale = static_cast<float>(Number(L, "min_random_scale", 1, false));
  a.max_random_scale = static_cast<float>(Number(L, "max_random_scale", 1, false));
  a.max_aspect_ratio = static_cast<float>(Number(L, "max_aspect_ratio", 0, false));
  a.min_aspect_ratio = static_cast<float>(Number(L, "min_aspect_ratio", -1, false));
  a.min_crop_size = Int(L, "min_crop_size", -1);
  a.max_crop_size = Int(L, "max_crop_size", -1);
  a.pad = Int(L, "pad", 0);
  a.fill_value = Int(L, "fill_value", 255);
  a.inter_method = Int(L, "inter_method", 1);
  a.rand_mirror = Bool(L, "rand_mirror", false);
  a.mirror = Bool(L, "mirror", false);
  return a;
}

io::LastBatch ReadLastBatch(lua_State* L) {
  const std::string s = String(L, "last_batch_handle");
  if (s.empty() || s == "pad") return io::LastBatch::kPad;
  if (s == "discard") return io::LastBatch::kDiscard;
  if (s == "roll_over") return io::LastBatch::kRollOver;
  TS_THROW << "ImageRecordIter: last_batch_handle must be 'pad', 'discard' or 'roll_over', got '"
           << s << "'";
}

io::ImageRecordIterParams ReadParams(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  io::ImageRecordIterParams p;
  p.path_imgrec = String(L, "path_imgrec");
  p.path_imgidx = String(L, "path_imgidx");
  p.aug = ReadAugment(L);
  p.batch_size = static_cast<int64_t>(Number(L, "batch_size", 0));
  p.label_width = Int(L, "label_width", 1);
  const std::string dtype = String(L, "dtype");
  p.dtype = dtype.empty() ? DType::kFloat32 : DTypeFromName(dtype);
  static const char* const kMean[] = {"mean_r", "mean_g", "mean_b"};
  static const char* const kStd[] = {"std_r", "std_g", "std_b"};
  const double scale = Number(L, "scale", 1, false);
  for (int c = 0; c < 3; ++c) {
    p.norm.mean[c] = static_cast<float>(Number(L, kMean[c], 0, false));
    p.norm.mult[c] = static_cast<float>(scale / Number(L, kStd[c], 1, false));
  }
  p.shuffle = Bool(L, "shuffle", false);
  const double seed = Number(L, "seed", 0);
  p.seed = static_cast<uint64_t>(static_cast<int64_t>(seed));
  p.shuffle_chunk_mb = static_cast<int64_t>(Number(L, "shuffle_chunk_size", 0));
  p.num_parts = Int(L, "num_parts", 1);
  p.part_index = Int(L, "part_index", 0);
  p.preprocess_threads = Int(L, "preprocess_threads", 4);
  p.prefetch_buffer = Int(L, "prefetch_buffer", 4);
  p.last_batch = ReadLastBatch(L);
  p.skip_corrupt = Bool(L, "skip_corrupt", false);
  const std::string ctx = String(L, "ctx");
  if (!ctx.empty()) p.ctx = Context::Parse(ctx);
  return p;
}

int New(lua_State* L) {
  io::ImageRecordIterParams p = ReadParams(L);
  Interpreter* in = Interpreter::Get();
  auto it = std::make_unique<ImageRecordIter>(std::move(p), [in] { in->queue().Wake(); });
  auto* box = static_cast<IterBox*>(lua_newuserdata(L, sizeof(IterBox)));
  new (box) IterBox{std::move(it)};
  luaL_getmetatable(L, kMeta);
  lua_setmetatable(L, -2);
  return 1;
}

// next() -> data, label, pad, {keys}; nothing at the end of the epoch.
int Next(lua_State* L) {
  ImageRecordIter& it = Check(L);
  // The workers never wait for Lua; serve the interpreter's queue while
  // waiting, as every wait does.
  if (!it.Ready()) Interpreter::Get()->ServeUntil(L, [&it] { return it.Ready(); });
  std::optional<io::ImageBatch> b = it.Next();
  if (!b) return 0;
  nd::PushNDArray(L, std::move(b->data));
  nd::PushNDArray(L, std::move(b->label));
  lua_pushinteger(L, static_cast<lua_Integer>(b->pad));
  lua_createtable(L, static_cast<int>(b->index.size()), 0);
  for (size_t i = 0; i < b->index.size(); ++i) {
    lua_pushnumber(L, static_cast<lua_Number>(b->index[i]));
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
  return 4;
}

int Reset(lua_State* L) {
  Check(L).Reset();
  return 0;
}

int NumBatches(lua_State* L) {
  lua_pushinteger(L, static_cast<lua_Integer>(Check(L).num_batches()));
  return 1;
}

int NumRecords(lua_State* L) {
  lua_pushinteger(L, static_cast<lua_Integer>(Check(L).num_records()));
  return 1;
}

int Skipped(lua_State* L) {
  const ImageRecordIter::Skipped s = Check(L).skipped();
  lua_pushinteger(L, static_cast<lua_Integer>(s.count));
  if (s.count == 0) return 1;
  lua_pushlstring(L, s.first.data(), s.first.size());
  return 2;
}

int Close(lua_State* L) {
  static_cast<IterBox*>(luaL_checkudata(L, 1, kMeta))->it.reset();
  return 0;
}

void Open(lua_State* L, int) {
  luaL_newmetatable(L, kMeta);
  lua_pushvalue(L, -1);
  lua_setfield(L, -2, "__index");
  SetFunctions(L, -1,
               {{"next", Guarded<Next>, nullptr},
                {"reset", Guarded<Reset>, nullptr},
                {"num_batches", Guarded<NumBatches>, nullptr},
                {"num_records", Guarded<NumRecords>, nullptr},
                {"skipped", Guarded<Skipped>, nullptr},
                {"close", Guarded<Close>, nullptr},
                {"__gc", Guarded<Close>, nullptr}});
  lua_pop(L, 1);
  // Into require('tessera.io'), which the io binding (order 45) made.
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "loaded");
  lua_getfield(L, -1, "tessera.io");
  TS_CHECK(lua_istable(L, -1)) << "shell: tessera.io is not open before image_iter";
  lua_pushcfunction(L, Guarded<New>);
  lua_setfield(L, -2, "image_record_iter");
  lua_pop(L, 3);
}

}  // namespace

TESSERA_SHELL_BINDING(image_iter, 46, Open);

}  // namespace tessera::shell
