/* demangle: C++ symbol names (the Itanium C++ ABI's mangling, as gcc and clang emit it) made
 * readable for the frame lines of a report, as c++filt prints them:
 *     _ZNSt6vectorIiSaIiEE9push_backERKi
 *       -> std::vector<int, std::allocator<int> >::push_back(int const&)
 *     _ZL3thrPv -> thr(void*)        _Z3foov.cold -> foo() [clone .cold]
 *
 * Safe in the SIGSEGV handler and inside the allocator: no allocation, no lock, no libc call
 * (not __cxa_demangle, which mallocs), no state outside the call. The parse tree lives on the
 * caller's stack (about 10 KiB: a fixed table of nodes), recursion and work are bounded, and the
 * text goes to the caller's buffer. Whatever it does not know (expressions in template
 * arguments, decltype, vector types, ...), a name too long or too deep, or a result that does
 * not fit: it returns false, and the caller prints the mangled name unchanged. */
#ifndef OSCAR_DEMANGLE_H
#define OSCAR_DEMANGLE_H
#include <stdbool.h>
#include <stddef.h>

/* Demangle the NUL-terminated name into out (cap bytes, NUL-terminated) and return true; or
 * return false (out then holds nothing useful) when name is not a mangled C++ name this
 * demangler reads whole, or the result does not fit in cap. */
bool demangle(const char *name, char *out, size_t cap);
#endif
