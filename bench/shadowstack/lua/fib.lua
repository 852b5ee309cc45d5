-- Recursive calls in the VM, plus a C function call per level (math.max).
local function fib(n) if n < 2 then return n end return math.max(fib(n - 1) + fib(n - 2), 0) end
print(fib(tonumber(arg[1]) or 30))
