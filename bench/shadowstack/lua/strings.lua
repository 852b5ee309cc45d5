-- String library calls: format, concat, gsub, find, rep.
local n = tonumber(arg[1]) or 200000
local acc = 0
for i = 1, n do
  local s = string.format("%d:%s:%5.2f", i, ("x"):rep(i % 7), i / 3)
  s = s:gsub("x", "yz")
  acc = acc + #s + (s:find("yz", 1, true) or 0)
end
print(acc)
