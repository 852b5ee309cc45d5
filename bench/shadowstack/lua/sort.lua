-- table.sort with a Lua comparator: C calls back into Lua for every comparison.
local n = tonumber(arg[1]) or 200000
local t = {}
local x = 42
for i = 1, n do x = (x * 1103515245 + 12345) % 2147483648; t[i] = x end
for _ = 1, 3 do
  local c = {}
  for i = 1, n do c[i] = t[i] end
  table.sort(c, function(a, b) return a > b end)
  t[1] = c[n]
end
print(t[1])
