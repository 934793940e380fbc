-- mx.monitor: MXNet's Monitor. Installed on executors, it takes a statistic
-- of every node's output (and input) every `interval` batches, as engine
-- ops pushed right after the node (the values are never copied to Lua), and
-- reads the statistics at toc().
local class = require 'tessera.class'
local help = require 'tessera.help'

return function(mx)
  local M = {}
  local Monitor = class.root('Monitor')

  -- MXNet's default: the norm over the square root of the size.
  local function mean_norm(x) return mx.nd.norm(x) / math.sqrt(math.max(1, x.size)) end

  function Monitor:__init(interval, stat_func, pattern, sort, opts)
    if type(interval) == 'table' then  -- Monitor{interval =, stat_func =, ...}
      opts = interval
      interval, stat_func, pattern, sort = opts.interval, opts.stat_func, opts.pattern, opts.sort
    end
    if type(interval) ~= 'number' or interval < 1 or interval % 1 ~= 0 then
      error('Monitor: interval must be a whole number of batches >= 1, got ' .. tostring(interval), 3)
    end
    if stat_func ~= nil and type(stat_func) ~= 'function' then
      error('Monitor: stat_func must be a function(array) -> array', 3)
    end
    self.interval, self.stat_func = interval, stat_func or mean_norm
    self.pattern, self.sort = pattern or '.*', sort and true or false
    self.monitor_all = opts and opts.monitor_all or false
    self.step, self.activated, self.queue, self.exes = 0, false, {}, {}
    self.stat_helper = function(name, array)
      if self.activated and name:match(self.pattern) then
        self.queue[#self.queue + 1] = { self.step, name, self.stat_func(array) }
      end
    end
  end

  -- Watches an executor (its nodes, and at toc its arguments and auxiliary
  -- states).
  function Monitor:install(exe, monitor_all)
    if monitor_all == nil then monitor_all = self.monitor_all end
    exe:set_monitor_callback(self.stat_helper, { monitor_all = monitor_all })
    self.exes[#self.exes + 1] = exe
  end

  -- Before a batch: starts collecting when this batch is one to watch.
  function Monitor:tic()
    if self.step % self.interval == 0 then
      self.queue = {}
      self.activated = true
    end
    self.step = self.step + 1
  end

  local function values_of(stat)
    if mx.nd.is_ndarray(stat) then
      local t = stat:reshape({ -1 }):totable()
      return #t == 1 and t[1] or t
    end
    return stat
  end

  -- After a batch: {{step, name, value}, ...} for the batch watched (value a
  -- number, or a list when the statistic has several), with the statistic
  -- of every argument and auxiliary state added; {} otherwise.
  function Monitor:toc()
    if not self.activated then return {} end
    for _, exe in ipairs(self.exes) do
      for _, dict in ipairs({ exe.arg_dict, exe.aux_dict }) do
        local names = {}
        for name in pairs(dict or {}) do names[#names + 1] = name end
        table.sort(names)
        for _, name in ipairs(names) do
          if name:match(self.pattern) then
            self.queue[#self.queue + 1] = { self.step, name, self.stat_func(dict[name]) }
          end
        end
      end
    end
    self.activated = false
    local res = {}
    for i, q in ipairs(self.queue) do res[i] = { q[1], q[2], values_of(q[3]) } end
    if self.sort then table.sort(res, function(a, b) return a[2] < b[2] end) end
    self.queue = {}
    return res
  end

  function Monitor:toc_print()
    for _, r in ipairs(self:toc()) do
      local v = r[3]
      if type(v) == 'table' then
        local parts = {}
        for i, x in ipairs(v) do parts[i] = ('%.6g'):format(x) end
        v = table.concat(parts, ' ')
      else
        v = ('%.6g'):format(v)
      end
      print(('Batch: %7d %30s %s'):format(r[1], r[2], v))
    end
  end

  M.Monitor = Monitor
  help.doc(M.Monitor, [[
mx.monitor.Monitor(interval, stat_func, pattern = '.*', sort = false) (or
Monitor{interval =, stat_func =, pattern =, sort =, monitor_all =}): MXNet's
monitor. mon:install(exe) (Module:install_monitor(mon) installs it on the
module's executors); mon:tic() before a batch, mon:toc() after it -> {{step,
name, value}, ...} every `interval` batches: stat_func(array) (default
norm(x) / sqrt(size)) of each node output whose name matches the Lua
pattern, and of the arguments and auxiliary states; mon:toc_print() prints
them. The statistics are NDArray ops pushed right after each node; toc
reads them.]])
  help.doc(M, 'mx.monitor: Monitor (see help(mx.monitor.Monitor)).')
  return M
end
