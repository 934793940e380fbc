-- mx.profiler's Lua half, as MXNet's profiler module: pause / resume,
-- dumps{reset, sort_by, ascending} (the aggregate statistics as text), and
-- user markers in the trace: Domain, Task, Frame, Event (spans), Counter
-- (a value over time), Marker (an instant).
local class = require 'tessera.class'
local help = require 'tessera.help'

return function(mx)
  local P = mx.profiler

  P.pause = help.doc(function() P.set_state('stop') end,
    'mx.profiler.pause() -> stops recording until resume(); what was recorded stays')
  P.resume = help.doc(function() P.set_state('run') end,
    'mx.profiler.resume() -> records again after pause()')

  local sort_keys = { total = 'total_ns', avg = 'avg', min = 'min_ns', max = 'max_ns',
    count = 'count', name = 'name' }

  function P.dumps(opts)
    if opts ~= nil and type(opts) ~= 'table' then opts = { reset = opts } end
    opts = opts or {}
    local by = opts.sort_by or 'total'
    local key = sort_keys[by]
    if not key then
      error(("mx.profiler.dumps: sort_by must be 'total', 'avg', 'min', 'max', 'count' or "
        .. "'name', got '%s'"):format(tostring(by)), 2)
    end
    local rows = P._aggregate()
    for _, r in ipairs(rows) do r.avg = r.count > 0 and r.total_ns / r.count or 0 end
    local asc = opts.ascending and true or false
    if key == 'name' and opts.ascending == nil then asc = true end
    table.sort(rows, function(a, b)
      if a[key] == b[key] then return a.name < b.name end
      if asc then return a[key] < b[key] end
      return a[key] > b[key]
    end)
    local lines = { ('%-32s %10s %14s %12s %12s %12s'):format('Name', 'Count', 'Total(ms)',
      'Min(ms)', 'Max(ms)', 'Avg(ms)') }
    for _, r in ipairs(rows) do
      lines[#lines + 1] = ('%-32s %10d %14.4f %12.4f %12.4f %12.4f'):format(r.name, r.count,
        r.total_ns / 1e6, r.min_ns / 1e6, r.max_ns / 1e6, r.avg / 1e6)
    end
    if opts.reset then P.clear() end
    return table.concat(lines, '\n') .. '\n'
  end

  local function check_name(v, who)
    if type(v) ~= 'string' or v == '' then error(who .. ': expected a name (a string)', 3) end
    return v
  end

  local Domain = class.root('Domain')
  function Domain:__init(name) self.name = check_name(name, 'mx.profiler.Domain') end
  function Domain:__tostring() return 'Domain(' .. self.name .. ')' end

  -- A span of the timeline: start() ... stop() (Task, Frame, Event).
  local Span = class.root('ProfilerSpan')
  function Span:__init(domain, name)
    if name == nil then domain, name = nil, domain end  -- Event(name)
    self.domain = domain and domain.name or ''
    self.name = check_name(name, 'mx.profiler.' .. self.kind)
  end
  function Span:start()
    if self.began then error(('%s %s: already started'):format(self.kind, self.name), 2) end
    self.began = P._now()
  end
  function Span:stop()
    if not self.began then error(('%s %s: stop() before start()'):format(self.kind, self.name), 2) end
    P._mark { name = self.name, domain = self.domain ~= '' and self.domain or self.kind:lower(),
      phase = 'X', begin_ns = self.began, end_ns = P._now() }
    self.began = nil
  end
  function Span:__tostring() return ('%s(%s)'):format(self.kind, self.name) end

  local Task = Span:extend('Task')
  Task.kind = 'Task'
  local Frame = Span:extend('Frame')
  Frame.kind = 'Frame'
  local Event = Span:extend('Event')
  Event.kind = 'Event'

  local Counter = class.root('Counter')
  function Counter:__init(domain, name, value)
    self.domain = domain.name
    self.name = check_name(name, 'mx.profiler.Counter')
    self.value = value or 0
    if value ~= nil then self:set_value(value) end
  end
  function Counter:set_value(v)
    if type(v) ~= 'number' then error('Counter:set_value: expected a number', 2) end
    self.value = v
    P._mark { name = self.name, domain = self.domain, phase = 'C', values = { [self.name] = v } }
  end
  function Counter:increment(d) self:set_value(self.value + (d or 1)) end
  function Counter:decrement(d) self:set_value(self.value - (d or 1)) end

  local scopes = { global = 'g', process = 'p', thread = 't' }
  local Marker = class.root('Marker')
  function Marker:__init(domain, name)
    self.domain = domain.name
    self.name = check_name(name, 'mx.profiler.Marker')
  end
  function Marker:mark(scope)
    local s = scopes[scope or 'process']
    if not s then error("Marker:mark: scope must be 'global', 'process' or 'thread'", 2) end
    P._mark { name = self.name, domain = self.domain, phase = 'i', scope = s }
  end

  function Domain:new_task(name) return Task(self, name) end
  function Domain:new_frame(name) return Frame(self, name) end
  function Domain:new_counter(name, value) return Counter(self, name, value) end
  function Domain:new_marker(name) return Marker(self, name) end

  P.Domain, P.Task, P.Frame, P.Event, P.Counter, P.Marker = Domain, Task, Frame, Event, Counter,
    Marker
  help.doc(P.dumps, [[
mx.profiler.dumps{reset = false, sort_by = 'total' | 'avg' | 'min' | 'max' | 'count' |
'name', ascending = false} -> the aggregate statistics (count, total, min, max,
average per op name) as text, as MXNet's; reset clears everything recorded
afterwards. mx.profiler.dumps_trace() returns the Chrome trace.]])
  help.doc(P.Domain, [[
mx.profiler.Domain(name): a category for markers. Task(domain, name),
Frame(domain, name) and Event(name) are spans: s:start() ... s:stop();
Counter(domain, name, value) a value over time: c:set_value(v),
c:increment(d), c:decrement(d); Marker(domain, name) an instant:
m:mark('process' | 'global' | 'thread'). They appear in the trace (under
'markers', counters as graphs) while the profiler runs; domain:new_task,
new_frame, new_counter, new_marker make them too.]])
end
