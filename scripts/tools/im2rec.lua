-- im2rec: image folders to MXNet's RecordIO files, as MXNet's im2rec.py.
--
-- Make a list (one class per sub-folder of ROOT, labels 0, 1, ... in name
-- order), split into train/val/test and shuffled:
--   tessera scripts/tools/im2rec.lua --list [--recursive] [--train-ratio 1]
--     [--test-ratio 0] [--no-shuffle] [--exts .jpeg,.jpg,.png] [--seed 0] PREFIX ROOT
-- writes PREFIX.lst (or PREFIX_train.lst, PREFIX_val.lst, PREFIX_test.lst):
-- lines "index<TAB>label<TAB>path relative to ROOT".
--
-- Pack every PREFIX*.lst into PREFIX*.rec and PREFIX*.idx:
--   tessera scripts/tools/im2rec.lua [--resize N] [--center-crop] [--quality 95]
--     [--encoding .jpg|.png] [--color 1|0|-1] [--pass-through] [--num-thread N]
--     PREFIX ROOT
-- --resize makes the shorter side N (OpenCV's area/bicubic as MXNet's
-- im2rec); --center-crop takes the central square; --pass-through stores the
-- files' bytes as they are. Images are decoded and encoded on --num-thread
-- threads (default: one per core), with a progress line on stderr.
local M = {}

local function fail(msg)
  error('im2rec: ' .. msg, 0)
end

local function parse(args)
  local o = { list = false, recursive = false, train_ratio = 1, test_ratio = 0, shuffle = true,
    exts = { '.jpeg', '.jpg', '.png' }, seed = 0, resize = 0, center_crop = false, quality = 95,
    encoding = '.jpg', color = 1, pass_through = false, quiet = false, num_thread = 0 }
  local pos = {}
  local i = 1
  local function value(name)
    i = i + 1
    if args[i] == nil then fail(name .. ' needs a value') end
    return args[i]
  end
  local function number(name)
    local v = tonumber(value(name))
    if v == nil then fail(name .. ' needs a number, got ' .. tostring(args[i])) end
    return v
  end
  while i <= #args do
    local a = args[i]
    if a == '--list' then o.list = true
    elseif a == '--recursive' then o.recursive = true
    elseif a == '--no-shuffle' then o.shuffle = false
    elseif a == '--center-crop' then o.center_crop = true
    elseif a == '--pass-through' then o.pass_through = true
    elseif a == '--quiet' then o.quiet = true
    elseif a == '--train-ratio' then o.train_ratio = number(a)
    elseif a == '--test-ratio' then o.test_ratio = number(a)
    elseif a == '--seed' then o.seed = number(a)
    elseif a == '--resize' then o.resize = number(a)
    elseif a == '--quality' then o.quality = number(a)
    elseif a == '--color' then o.color = number(a)
    elseif a == '--num-thread' then o.num_thread = number(a)
    elseif a == '--encoding' then o.encoding = value(a)
    elseif a == '--exts' then
      o.exts = {}
      for e in value(a):gmatch('[^,]+') do o.exts[#o.exts + 1] = e:lower() end
    elseif a:sub(1, 2) == '--' then fail('unknown option ' .. a)
    else pos[#pos + 1] = a end
    i = i + 1
  end
  if #pos ~= 2 then fail('usage: im2rec.lua [options] PREFIX ROOT (see the top of the script)') end
  o.prefix, o.root = pos[1], pos[2]:gsub('/+$', '')
  if o.train_ratio < 0 or o.test_ratio < 0 or o.train_ratio + o.test_ratio > 1 then
    fail('--train-ratio and --test-ratio must be >= 0 and sum to at most 1')
  end
  if o.encoding ~= '.jpg' and o.encoding ~= '.png' then fail("--encoding must be '.jpg' or '.png'") end
  return o
end

local function shell_quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

-- Files under `dir` (sorted), as paths relative to it.
local function files_under(dir, recursive)
  local cmd = ('find %s %s -type f 2>/dev/null | LC_ALL=C sort'):format(shell_quote(dir),
    recursive and '' or '-maxdepth 1')
  local p = io.popen(cmd)
  local out = {}
  for line in p:lines() do out[#out + 1] = line:sub(#dir + 2) end
  p:close()
  return out
end

local function subdirs(dir)
  local p = io.popen(('find %s -mindepth 1 -maxdepth 1 -type d 2>/dev/null | LC_ALL=C sort'):format(
    shell_quote(dir)))
  local out = {}
  for line in p:lines() do out[#out + 1] = line:match('([^/]+)$') end
  p:close()
  return out
end

local function has_ext(path, exts)
  local e = (path:match('(%.[^./]+)$') or ''):lower()
  for _, x in ipairs(exts) do if e == x then return true end end
  return false
end

-- The images of ROOT: {path, label}, one label per sub-folder (or 0 for
-- files directly in ROOT when it has no sub-folders).
function M.list_images(root, o)
  local items = {}
  local dirs = subdirs(root)
  if #dirs == 0 then
    for _, f in ipairs(files_under(root, false)) do
      if has_ext(f, o.exts) then items[#items + 1] = { path = f, label = 0 } end
    end
    return items
  end
  for label, d in ipairs(dirs) do
    for _, f in ipairs(files_under(root .. '/' .. d, o.recursive)) do
      if has_ext(f, o.exts) then items[#items + 1] = { path = d .. '/' .. f, label = label - 1 } end
    end
  end
  return items
end

local function write_lst(path, items)
  local lines = {}
  for i, it in ipairs(items) do lines[i] = ('%d\t%d\t%s\n'):format(it.index, it.label, it.path) end
  require('tessera.io').write_file(path, table.concat(lines), 'im2rec')
end

function M.make_lists(o)
  local items = M.list_images(o.root, o)
  for i, it in ipairs(items) do it.index = i - 1 end
  if o.shuffle then
    math.randomseed(o.seed)
    for i = #items, 2, -1 do
      local j = math.random(1, i)
      items[i], items[j] = items[j], items[i]
    end
  end
  local n = #items
  local n_test = math.floor(n * o.test_ratio)
  local n_train = math.floor(n * o.train_ratio)
  local written = {}
  local function part(name, from, to)
    local sub = {}
    for i = from, to do sub[#sub + 1] = items[i] end
    local path = o.prefix .. name .. '.lst'
    write_lst(path, sub)
    written[#written + 1] = { path = path, count = #sub }
  end
  if o.train_ratio == 1 and o.test_ratio == 0 then
    part('', 1, n)
  else
    if n_test > 0 then part('_test', 1, n_test) end
    part('_train', n_test + 1, n_test + n_train)
    if n_test + n_train < n then part('_val', n_test + n_train + 1, n) end
  end
  return written
end

local function read_lst(path)
  local items = {}
  local n = 0
  for line in io.lines(path) do
    n = n + 1
    if line ~= '' then
      local fields = {}
      for f in (line .. '\t'):gmatch('([^\t]*)\t') do fields[#fields + 1] = f end
      if #fields < 3 then fail(('%s line %d: expected index<TAB>label(s)<TAB>path'):format(path, n)) end
      local labels = {}
      for i = 2, #fields - 1 do
        labels[#labels + 1] = tonumber(fields[i]) or
          fail(('%s line %d: label %q is not a number'):format(path, n, fields[i]))
      end
      items[#items + 1] = { index = tonumber(fields[1]) or
        fail(('%s line %d: index %q is not a number'):format(path, n, fields[1])),
        labels = labels, path = fields[#fields] }
    end
  end
  return items
end

local function progress(o, done, total, name)
  if o.quiet then return end
  io.stderr:write(('\r%s: %d/%d images'):format(name, done, total))
  if done == total then io.stderr:write('\n') end
end

-- Images are read, decoded, cropped, resized and encoded again (or passed
-- through) on o.num_thread threads in C++, a chunk of the list at a time;
-- records are written in list order.
local kChunk = 256

function M.pack(lst, o)
  local items = read_lst(lst)
  local base = lst:gsub('%.lst$', '')
  local rec = mx.recordio.MXIndexedRecordIO(base .. '.idx', base .. '.rec', 'w')
  local opts = { pass_through = o.pass_through, color = o.color, center_crop = o.center_crop,
    resize = o.resize, encoding = o.encoding, quality = o.quality }
  for first = 1, #items, kChunk do
    local last = math.min(first + kChunk - 1, #items)
    local paths = {}
    for i = first, last do paths[#paths + 1] = o.root .. '/' .. items[i].path end
    local ok, payloads = pcall(require('tessera.io').transcode_files, paths, opts, o.num_thread,
      'im2rec')
    if not ok then fail(tostring(payloads):gsub('^im2rec: ', '')) end
    for i = first, last do
      local it = items[i]
      local label = #it.labels == 1 and it.labels[1] or it.labels
      local header = mx.recordio.IRHeader(0, label, it.index, 0)
      rec:write_idx(it.index, mx.recordio.pack(header, payloads[i - first + 1]))
    end
    progress(o, last, #items, base .. '.rec')
  end
  rec:close()
  return #items
end

-- The lists PREFIX*.lst beside PREFIX.
local function lists_of(prefix)
  local dir, name = prefix:match('^(.*)/([^/]*)$')
  dir, name = dir or '.', name or prefix
  local out = {}
  for _, f in ipairs(files_under(dir, false)) do
    if f:sub(1, #name) == name and f:match('%.lst$') then out[#out + 1] = dir .. '/' .. f end
  end
  return out
end

function M.main(args)
  local o = parse(args)
  if o.list then return M.make_lists(o) end
  local lists = lists_of(o.prefix)
  if #lists == 0 then fail('no ' .. o.prefix .. '*.lst: make one with --list first') end
  local packed = {}
  for _, lst in ipairs(lists) do packed[#packed + 1] = { path = lst, count = M.pack(lst, o) } end
  return packed
end

if arg and arg[0] and arg[0]:match('im2rec%.lua$') and not rawget(_G, 'IM2REC_AS_MODULE') then
  M.main(arg)
end
return M
