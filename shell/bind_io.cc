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
// call before opening one; list_dir(path, who) -> {files}, {folders}: the
// names in a folder, each list sorted (byte order), hidden names left out.
//
// RecordIO files (engine/io/recordio.h), behind mx.recordio
// (shell/lua/mx/recordio.lua):
//
//   local w = require('tessera.io').record_writer(path, 'MXRecordIO')
//   w:write(bytes); w:tell(); w:close()      -- the file appears at close
//   w:discard()                              -- or never (also when collected)
//   local r = require('tessera.io').record_reader(path, 'MXRecordIO')
//   r:read() -> bytes, or nil at the end; r:seek(pos); r:tell(); r:size()
//   write_file(path, bytes, who)             -- whole, through a temporary
//   pack_header(flag, label, id, id2) -> 24 bytes; unpack_header(bytes) -> the four
//
// Images (engine/io/image_codec.h), behind mx.image and pack_img:
//
//   decode_image(bytes, channels, to_rgb, who) -> a uint8 NDArray (h, w, channels)
//   encode_image(array, '.jpg' | '.png', quality, who) -> bytes
//   resize_image(array, width, height, interp, who) -> a uint8 NDArray (OpenCV's resize)
//   transcode_files({paths}, {pass_through =, color =, center_crop =, resize =,
//     encoding = '.jpg' | '.png', quality =}, threads, who) -> {payloads}, in order
//     (im2rec's per-image work on `threads` threads; engine/io/image_transcode.h)
#include <sys/stat.h>
#include <lua.hpp>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "bind_ndarray.h"
#include "bindings.h"
#include "engine/base/atomic_file.h"
#include "engine/base/error.h"
#include "engine/base/regular_file.h"
#include "engine/io/batch_prefetcher.h"
#include "engine/io/csv_file.h"
#include "engine/io/idx_file.h"
#include "engine/io/image_codec.h"
#include "engine/io/image_resize.h"
#include "engine/io/image_transcode.h"
#include "engine/io/recordio.h"
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

void PushNames(lua_State* L, const std::vector<std::string>& names) {
  lua_createtable(L, static_cast<int>(names.size()), 0);
  for (size_t i = 0; i < names.size(); ++i) {
    lua_pushlstring(L, names[i].data(), names[i].size());
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
}

int ListDir(lua_State* L) {
  const std::string who = CheckString(L, 2, "list_dir: who");
  const std::string path = CheckString(L, 1, who + ": the path");
  namespace fs = std::filesystem;
  std::error_code ec;
  TS_CHECK(fs::is_directory(path, ec)) << who << ": " << path << " is not a folder";
  std::vector<std::string> files, dirs;
  for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    std::error_code kind;
    if (it->is_directory(kind))
      dirs.push_back(name);
    else if (it->is_regular_file(kind))
      files.push_back(name);
  }
  TS_CHECK(!ec) << who << ": cannot read the folder " << path << ": " << ec.message();
  std::sort(files.begin(), files.end());
  std::sort(dirs.begin(), dirs.end());
  PushNames(L, files);
  PushNames(L, dirs);
  return 2;
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

// ---- RecordIO ----------------------------------------------------------------

constexpr const char* kWriterMeta = "tessera.RecordWriter";
constexpr const char* kReaderMeta = "tessera.RecordReader";

template <typename T>
struct Box {
  std::unique_ptr<T> p;
};

template <typename T>
T& CheckOpen(lua_State* L, const char* meta, const char* what) {
  auto* box = static_cast<Box<T>*>(luaL_checkudata(L, 1, meta));
  if (!box->p) luaL_error(L, "%s: the file is closed", what);
  return *box->p;
}

template <typename T>
int NewBox(lua_State* L, const char* meta) {
  const std::string who = luaL_optstring(L, 2, "MXRecordIO");
  const std::string path = CheckString(L, 1, who + ": the path");
  auto p = std::make_unique<T>(path, who);
  auto* box = static_cast<Box<T>*>(lua_newuserdata(L, sizeof(Box<T>)));
  new (box) Box<T>{std::move(p)};
  luaL_getmetatable(L, meta);
  lua_setmetatable(L, -2);
  return 1;
}

int NewWriter(lua_State* L) {
  return NewBox<io::RecordWriter>(L, kWriterMeta);
}

int NewReader(lua_State* L) {
  return NewBox<io::RecordReader>(L, kReaderMeta);
}

int WriterWrite(lua_State* L) {
  io::RecordWriter& w = CheckOpen<io::RecordWriter>(L, kWriterMeta, "MXRecordIO.write");
  size_t n = 0;
  const char* bytes = luaL_checklstring(L, 2, &n);
  w.Write({bytes, n});
  return 0;
}

int WriterTell(lua_State* L) {
  lua_pushnumber(L, static_cast<lua_Number>(
                        CheckOpen<io::RecordWriter>(L, kWriterMeta, "MXRecordIO.tell").Tell()));
  return 1;
}

// close() makes the file; the collector of an unclosed writer removes its
// temporary instead (a script that fails half-way leaves no partial file).
int WriterClose(lua_State* L) {
  auto* box = static_cast<Box<io::RecordWriter>*>(luaL_checkudata(L, 1, kWriterMeta));
  if (!box->p) return 0;
  std::unique_ptr<io::RecordWriter> w = std::move(box->p);
  w->Close();
  return 0;
}

int WriterGc(lua_State* L) {
  static_cast<Box<io::RecordWriter>*>(luaL_checkudata(L, 1, kWriterMeta))->p.reset();
  return 0;
}

int ReaderRead(lua_State* L) {
  io::RecordReader& r = CheckOpen<io::RecordReader>(L, kReaderMeta, "MXRecordIO.read");
  std::string rec;
  if (!r.Next(&rec)) return 0;
  lua_pushlstring(L, rec.data(), rec.size());
  return 1;
}

int ReaderSeek(lua_State* L) {
  io::RecordReader& r = CheckOpen<io::RecordReader>(L, kReaderMeta, "MXRecordIO.seek");
  const lua_Number pos = luaL_checknumber(L, 2);
  luaL_argcheck(L, pos >= 0 && pos == static_cast<lua_Number>(static_cast<uint64_t>(pos)), 2,
                "a position is a whole number of bytes from 0");
  r.Seek(static_cast<uint64_t>(pos));
  return 0;
}

int ReaderTell(lua_State* L) {
  lua_pushnumber(L, static_cast<lua_Number>(
                        CheckOpen<io::RecordReader>(L, kReaderMeta, "MXRecordIO.tell").Tell()));
  return 1;
}

int ReaderSize(lua_State* L) {
  lua_pushnumber(L, static_cast<lua_Number>(
                        CheckOpen<io::RecordReader>(L, kReaderMeta, "MXRecordIO.size").size()));
  return 1;
}

int ReaderClose(lua_State* L) {
  static_cast<Box<io::RecordReader>*>(luaL_checkudata(L, 1, kReaderMeta))->p.reset();
  return 0;
}

// write_file(path, bytes, who): the whole file, through a temporary.
int WriteFile(lua_State* L) {
  const std::string who = luaL_optstring(L, 3, "write_file");
  const std::string path = CheckString(L, 1, who + ": the path");
  size_t n = 0;
  const char* bytes = luaL_checklstring(L, 2, &n);
  WriteFileAtomically(path, std::string_view(bytes, n), who);
  return 0;
}

// A whole number in [0, limit] from argument i.
uint64_t CheckCount(lua_State* L, int i, double limit, const char* what) {
  const lua_Number v = luaL_checknumber(L, i);
  if (!(v >= 0 && v <= limit && v == static_cast<lua_Number>(static_cast<uint64_t>(v))))
    luaL_error(L, "pack: %s must be a whole number from 0 to %.0f, got %f", what, limit, v);
  return static_cast<uint64_t>(v);
}

int PackHeader(lua_State* L) {
  io::ImageRecordHeader h;
  h.flag = static_cast<uint32_t>(CheckCount(L, 1, 4294967295.0, "flag"));
  h.label = static_cast<float>(luaL_checknumber(L, 2));
  h.id = CheckCount(L, 3, 18446744073709551615.0, "id");
  h.id2 = CheckCount(L, 4, 18446744073709551615.0, "id2");
  const std::string s = io::PackImageRecordHeader(h);
  lua_pushlstring(L, s.data(), s.size());
  return 1;
}

int UnpackHeader(lua_State* L) {
  size_t n = 0;
  const char* bytes = luaL_checklstring(L, 1, &n);
  const io::ImageRecordHeader h = io::UnpackImageRecordHeader({bytes, n}, "unpack");
  lua_pushnumber(L, h.flag);
  lua_pushnumber(L, static_cast<lua_Number>(h.label));
  lua_pushnumber(L, static_cast<lua_Number>(h.id));
  lua_pushnumber(L, static_cast<lua_Number>(h.id2));
  return 4;
}

// ---- images --------------------------------------------------------------------

// The pixels of a uint8 (h, w, c) or (h, w) array at argument 1.
io::Image CheckImage(lua_State* L, const std::string& who) {
  const std::string what = who + ": the image";
  const NDArray& a = nd::CheckNDArray(L, 1, what.c_str());
  const Shape& s = a.shape();
  TS_CHECK(a.dtype() == DType::kUint8 &&
           (s.ndim() == 2 || (s.ndim() == 3 && (s[2] == 1 || s[2] == 3))))
      << who << ": the image must be uint8 of shape (height, width, 3), (height, width, 1) or "
      << "(height, width), got " << DTypeName(a.dtype()) << " " << s;
  io::Image im;
  im.height = s[0];
  im.width = s[1];
  im.channels = s.ndim() == 3 ? s[2] : 1;
  im.pixels.resize(static_cast<size_t>(s.Size()));
  a.SyncCopyToCPU(im.pixels.data(), im.pixels.size());
  return im;
}

void PushImage(lua_State* L, const io::Image& im) {
  NDArray out(Shape{im.height, im.width, im.channels}, Context::CPU(), DType::kUint8);
  out.SyncCopyFromCPU(im.pixels.data(), im.pixels.size());
  nd::PushNDArray(L, std::move(out));
}

int DecodeImage(lua_State* L) {
  size_t n = 0;
  const char* bytes = luaL_checklstring(L, 1, &n);
  const int channels = static_cast<int>(luaL_checkinteger(L, 2));
  const bool to_rgb = lua_isnone(L, 3) || lua_toboolean(L, 3);
  const std::string who = luaL_optstring(L, 4, "imdecode");
  io::Image im = io::DecodeImage({bytes, n}, channels, who);
  if (!to_rgb && im.channels == 3)  // BGR, OpenCV's order
    for (size_t i = 0; i < im.pixels.size(); i += 3) std::swap(im.pixels[i], im.pixels[i + 2]);
  PushImage(L, im);
  return 1;
}

int ResizeImage(lua_State* L) {
  const std::string who = luaL_optstring(L, 5, "imresize");
  const io::Image im = CheckImage(L, who);
  const int64_t w = luaL_checkinteger(L, 2), h = luaL_checkinteger(L, 3);
  const int interp = static_cast<int>(luaL_optinteger(L, 4, 1));
  PushImage(L, io::ResizeImage(im, w, h, interp, who));
  return 1;
}

io::ImageFormat CheckFormat(const std::string& fmt, const std::string& who) {
  if (fmt == ".jpg" || fmt == ".jpeg" || fmt == "jpg" || fmt == "jpeg")
    return io::ImageFormat::kJpeg;
  if (fmt == ".png" || fmt == "png") return io::ImageFormat::kPng;
  TS_THROW << who << ": img_fmt must be '.jpg' or '.png', got '" << fmt << "'";
}

int EncodeImage(lua_State* L) {
  const std::string who = luaL_optstring(L, 4, "imencode");
  const std::string fmt = CheckString(L, 2, who + ": img_fmt");
  const int quality = static_cast<int>(luaL_optinteger(L, 3, 95));
  const std::string out = io::EncodeImage(CheckImage(L, who), CheckFormat(fmt, who), quality, who);
  lua_pushlstring(L, out.data(), out.size());
  return 1;
}

int TranscodeFiles(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, 2, LUA_TTABLE);
  const int threads = static_cast<int>(luaL_optinteger(L, 3, 0));
  const std::string who = luaL_optstring(L, 4, "im2rec");
  std::vector<std::string> paths;
  for (int i = 1, n = static_cast<int>(lua_objlen(L, 1)); i <= n; ++i) {
    lua_rawgeti(L, 1, i);
    paths.push_back(CheckString(L, -1, who + ": a path"));
    lua_pop(L, 1);
  }
  io::TranscodeOptions o;
  lua_getfield(L, 2, "pass_through");
  o.pass_through = lua_toboolean(L, -1) != 0;
  lua_getfield(L, 2, "center_crop");
  o.center_crop = lua_toboolean(L, -1) != 0;
  lua_getfield(L, 2, "color");
  o.channels = luaL_optinteger(L, -1, 1) == 0 ? 1 : 3;
  lua_getfield(L, 2, "resize");
  o.resize = static_cast<int>(luaL_optinteger(L, -1, 0));
  lua_getfield(L, 2, "quality");
  o.quality = static_cast<int>(luaL_optinteger(L, -1, 95));
  lua_getfield(L, 2, "encoding");
  o.format = CheckFormat(luaL_optstring(L, -1, ".jpg"), who);
  lua_pop(L, 6);
  const std::vector<std::string> out = io::TranscodeFiles(paths, o, threads, who);
  lua_createtable(L, static_cast<int>(out.size()), 0);
  for (size_t i = 0; i < out.size(); ++i) {
    lua_pushlstring(L, out[i].data(), out[i].size());
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
  return 1;
}

void Open(lua_State* L, int) {
  luaL_newmetatable(L, kWriterMeta);
  lua_pushvalue(L, -1);
  lua_setfield(L, -2, "__index");
  SetFunctions(L, -1,
               {{"write", Guarded<WriterWrite>, nullptr},
                {"tell", Guarded<WriterTell>, nullptr},
                {"close", Guarded<WriterClose>, nullptr},
                {"discard", Guarded<WriterGc>, nullptr},
                {"__gc", Guarded<WriterGc>, nullptr}});
  lua_pop(L, 1);
  luaL_newmetatable(L, kReaderMeta);
  lua_pushvalue(L, -1);
  lua_setfield(L, -2, "__index");
  SetFunctions(L, -1,
               {{"read", Guarded<ReaderRead>, nullptr},
                {"seek", Guarded<ReaderSeek>, nullptr},
                {"tell", Guarded<ReaderTell>, nullptr},
                {"size", Guarded<ReaderSize>, nullptr},
                {"close", Guarded<ReaderClose>, nullptr},
                {"__gc", Guarded<ReaderClose>, nullptr}});
  lua_pop(L, 1);

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
                {"list_dir", Guarded<ListDir>, nullptr},
                {"read_idx", Guarded<ReadIdx>, nullptr},
                {"read_csv", Guarded<ReadCsv>, nullptr},
                {"record_writer", Guarded<NewWriter>, nullptr},
                {"record_reader", Guarded<NewReader>, nullptr},
                {"write_file", Guarded<WriteFile>, nullptr},
                {"pack_header", Guarded<PackHeader>, nullptr},
                {"unpack_header", Guarded<UnpackHeader>, nullptr},
                {"decode_image", Guarded<DecodeImage>, nullptr},
                {"encode_image", Guarded<EncodeImage>, nullptr},
                {"resize_image", Guarded<ResizeImage>, nullptr},
                {"transcode_files", Guarded<TranscodeFiles>, nullptr}});
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "loaded");
  lua_pushvalue(L, -3);
  lua_setfield(L, -2, "tessera.io");
  lua_pop(L, 3);
}

}  // namespace

TESSERA_SHELL_BINDING(io, 45, Open);

}  // namespace tessera::shell
