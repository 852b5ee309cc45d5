-- Binary trees: allocation and the garbage collector.
local function make(d) if d == 0 then return {} end d = d - 1 return {make(d), make(d)} end
local function check(t) if t[1] then return 1 + check(t[1]) + check(t[2]) end return 1 end
local depth = tonumber(arg[1]) or 16
local total = 0
for i = 1, 8 do total = total + check(make(depth)) end
print(total)
