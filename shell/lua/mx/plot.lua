-- mx.plot: line plots through gnuplot, in the spirit of Torch7's gnuplot
-- package, and small charts drawn in the terminal with Unicode braille.
--
--   local fig = mx.plot.figure{title = 'loss', xlabel = 'batch'}
--   mx.plot.plot(losses, 'train')           -- y only: x = 1, 2, ...
--   mx.plot.plot(xs, accs, {label = 'validation', style = 'linespoints'})
--   mx.plot.savefig('curves.png')           -- .png, .svg or .pdf
--   print(mx.plot.chart(losses))            -- a chart in the terminal
--
-- savefig writes the numbers it plots beside the picture (curves.png.dat:
-- one block per series, "x y" per line, blocks separated by two blank
-- lines, as gnuplot's `index` reads them) and the picture through a
-- temporary name, so a reader never sees half a file.
local class = require 'tessera.class'
local help = require 'tessera.help'

return function(mx)
  local M = {}
  local Figure = class.root('Figure')

  function Figure:__init(opts)
    opts = opts or {}
    self.title, self.xlabel, self.ylabel = opts.title, opts.xlabel, opts.ylabel
    self.width, self.height = opts.width or 800, opts.height or 500
    self.series = {}
  end

  local function numbers(v, what)
    if mx.nd.is_ndarray(v) then v = v:reshape({ -1 }):totable() end
    if type(v) ~= 'table' then error(('plot: %s must be a list of numbers or an NDArray'):format(what), 4) end
    for i, x in ipairs(v) do
      if type(x) ~= 'number' then
        error(('plot: %s[%d] is %s, not a number'):format(what, i, type(x)), 4)
      end
    end
    return v
  end

  local function is_values(v)
    return mx.nd.is_ndarray(v) or (type(v) == 'table' and type(v[1]) == 'number')
  end

  -- fig:plot(y [, label | opts]) or fig:plot(x, y [, label | opts]).
  function Figure:plot(a, b, c)
    local x, y, opts
    if is_values(b) then
      x, y, opts = numbers(a, 'x'), numbers(b, 'y'), c
    else
      y, opts = numbers(a, 'y'), b
      x = {}
      for i = 1, #y do x[i] = i end
    end
    if #x ~= #y then error(('plot: %d x values but %d y values'):format(#x, #y), 2) end
    if type(opts) == 'string' then opts = { label = opts } end
    opts = opts or {}
    self.series[#self.series + 1] = { x = x, y = y, label = opts.label or ('series ' .. (#self.series + 1)),
      style = opts.style or 'lines' }
    return self
  end

  local terminals = { png = 'pngcairo', svg = 'svg', pdf = 'pdfcairo' }

  local function gp_string(s) return "'" .. tostring(s):gsub("'", "''") .. "'" end

  local function write_file(path, text)
    local f, err = io.open(path, 'w')
    if not f then error('savefig: cannot write ' .. path .. ': ' .. tostring(err), 0) end
    f:write(text)
    f:close()
  end

  local function has_gnuplot()
    local p = io.popen('command -v gnuplot 2>/dev/null')
    local found = p:read('*l')
    p:close()
    return found and found ~= ''
  end

  -- Writes the figure to `path` (its extension picks the format) and the
  -- numbers to path .. '.dat'; returns path.
  function Figure:savefig(path)
    if type(path) ~= 'string' then error('savefig: expected a file name', 2) end
    local ext = path:match('%.(%w+)$')
    local term = ext and terminals[ext:lower()]
    if not term then error(("savefig: '%s': the name must end in .png, .svg or .pdf"):format(path), 2) end
    if #self.series == 0 then error('savefig: the figure has nothing plotted', 2) end
    if not has_gnuplot() then
      error('savefig: gnuplot is not installed (apt-get install gnuplot-nox)', 2)
    end
    local blocks = {}
    for i, s in ipairs(self.series) do
      local lines = { '# ' .. s.label }
      for j = 1, #s.x do lines[#lines + 1] = ('%.17g %.17g'):format(s.x[j], s.y[j]) end
      blocks[i] = table.concat(lines, '\n')
    end
    local dat = path .. '.dat'
    write_file(dat .. '.tmp', table.concat(blocks, '\n\n\n') .. '\n')
    os.rename(dat .. '.tmp', dat)
    local tmp = path .. '.tmp.' .. ext
    local script = {
      ('set terminal %s size %d,%d'):format(term, self.width, self.height),
      'set output ' .. gp_string(tmp),
      'set key outside right top',
      'set grid',
    }
    if self.title then script[#script + 1] = 'set title ' .. gp_string(self.title) end
    if self.xlabel then script[#script + 1] = 'set xlabel ' .. gp_string(self.xlabel) end
    if self.ylabel then script[#script + 1] = 'set ylabel ' .. gp_string(self.ylabel) end
    local plots = {}
    for i, s in ipairs(self.series) do
      plots[i] = ('%s index %d using 1:2 with %s title %s'):format(gp_string(dat), i - 1, s.style,
        gp_string(s.label))
    end
    script[#script + 1] = 'plot ' .. table.concat(plots, ', ')
    script[#script + 1] = 'unset output'
    local gp = os.tmpname()
    write_file(gp, table.concat(script, '\n') .. '\n')
    local p = io.popen(("gnuplot '%s' 2>&1"):format((gp:gsub("'", "'\\''"))))
    local out = p:read('*a')
    p:close()
    os.remove(gp)
    local f = io.open(tmp, 'rb')
    local size = f and f:seek('end') or 0
    if f then f:close() end
    if size == 0 then
      os.remove(tmp)
      error('savefig: gnuplot failed: ' .. out, 2)
    end
    local ok, err = os.rename(tmp, path)
    if not ok then
      os.remove(tmp)
      error('savefig: cannot write ' .. path .. ': ' .. tostring(err), 2)
    end
    return path
  end

  -- ---- the current figure, as Torch7's gnuplot ----
  local current

  function M.figure(opts)
    current = Figure(opts)
    return current
  end

  function M.gcf()
    current = current or Figure()
    return current
  end

  function M.plot(...) return M.gcf():plot(...) end

  function M.savefig(path) return M.gcf():savefig(path) end

  -- ---- charts in the terminal ----

  -- Braille cells: 2 dots wide, 4 high; the bit of each dot (Unicode's order).
  local dot_bits = { { 0x01, 0x08 }, { 0x02, 0x10 }, { 0x04, 0x20 }, { 0x40, 0x80 } }

  local function utf8(cp)
    return string.char(0xE0 + math.floor(cp / 4096), 0x80 + math.floor(cp / 64) % 64, 0x80 + cp % 64)
  end

  -- A chart of y (a list or an NDArray) in width x height characters of
  -- braille dots, with the range on the left: a string of `height` lines.
  function M.chart(y, opts)
    y = numbers(y, 'y')
    opts = opts or {}
    local w, h = opts.width or 60, opts.height or 8
    if #y == 0 then return '' end
    local lo, hi = math.huge, -math.huge
    for _, v in ipairs(y) do
      if v == v and v > -math.huge and v < math.huge then lo, hi = math.min(lo, v), math.max(hi, v) end
    end
    if lo > hi then lo, hi = 0, 1 end
    if hi == lo then hi = lo + 1 end
    local cols, rows = w * 2, h * 4
    local cells = {}
    for r = 1, h do
      cells[r] = {}
      for c = 1, w do cells[r][c] = 0 end
    end
    local function dot(col, row)
      local cr, cc = math.floor(row / 4) + 1, math.floor(col / 2) + 1
      cells[cr][cc] = bit.bor(cells[cr][cc], dot_bits[row % 4 + 1][col % 2 + 1])
    end
    local function finite(v) return v == v and v > -math.huge and v < math.huge end
    local function place(i, v)
      local col = #y == 1 and 0 or math.floor((i - 1) * (cols - 1) / (#y - 1) + 0.5)
      return col, math.floor((hi - v) * (rows - 1) / (hi - lo) + 0.5)
    end
    -- A line through the points: every column between two points gets the
    -- interpolated row, and each step is filled vertically.
    local pc, pr
    for i, v in ipairs(y) do
      if finite(v) then
        local col, row = place(i, v)
        if pc then
          local last = pr
          for c = pc + 1, col do
            local r = math.floor(pr + (row - pr) * (c - pc) / (col - pc) + 0.5)
            for rr = math.min(last, r), math.max(last, r) do dot(c, rr) end
            last = r
          end
        end
        dot(col, row)
        pc, pr = col, row
      else
        pc, pr = nil, nil
      end
    end
    local out = {}
    for r = 1, h do
      local label = r == 1 and ('%9.4g '):format(hi) or r == h and ('%9.4g '):format(lo) or (' '):rep(10)
      local line = { label, '|' }
      for c = 1, w do line[#line + 1] = utf8(0x2800 + cells[r][c]) end
      out[r] = table.concat(line)
    end
    return table.concat(out, '\n')
  end

  -- The curves of a training history (Module:fit's, Estimator:fit's: a
  -- record per epoch with `epoch`, `train = {name, value}`, `batches` (the
  -- running metric after each batch) and `validation = {{name, value}, ...}`):
  -- the training metric per batch and per epoch, the validation metric per
  -- epoch, written to `path`.
  function M.training_curves(path, history)
    local name = history[1] and history[1].train[1] or 'metric'
    if type(name) == 'table' then name = name[1] end
    local fig = Figure { title = 'training', xlabel = 'epoch', ylabel = tostring(name) }
    local bx, by, ex, ey, vx, vy = {}, {}, {}, {}, {}, {}
    for _, rec in ipairs(history) do
      local n = #(rec.batches or {})
      for i, v in ipairs(rec.batches or {}) do bx[#bx + 1], by[#by + 1] = rec.epoch + i / n, v end
      local tv = rec.train[2]
      ex[#ex + 1], ey[#ey + 1] = rec.epoch + 1, type(tv) == 'table' and tv[1] or tv
      if rec.validation then vx[#vx + 1], vy[#vy + 1] = rec.epoch + 1, rec.validation[1][2] end
    end
    if #bx > 0 then fig:plot(bx, by, 'train (per batch)') end
    fig:plot(ex, ey, { label = 'train (epoch)', style = 'linespoints' })
    if #vx > 0 then fig:plot(vx, vy, { label = 'validation', style = 'linespoints' }) end
    return fig:savefig(path)
  end

  M.Figure = Figure
  help.doc(M, [[
mx.plot: line plots through gnuplot (Torch7's gnuplot package in spirit) and
braille charts in the terminal. mx.plot.figure{title, xlabel, ylabel, width,
height} -> a new current figure; mx.plot.plot(y [, label]) or plot(x, y
[, label | {label =, style = 'lines' | 'linespoints' | 'points'}]) adds a
series (lists or NDArrays); mx.plot.savefig('f.png' | 'f.svg' | 'f.pdf')
writes it (the numbers go to f.png.dat); fig:plot / fig:savefig on a
figure; mx.plot.chart(y, {width = 60, height = 8}) -> a chart as text.
Module:fit{plot = 'curves.png'} writes its training curves with it.]])
  return M
end
