/* export_cxx: C++ operator new and delete in all their forms, by their mangled names.
 * Written in C (compiled with -fexceptions so std::bad_alloc can unwind through it): the
 * throwing forms call the new-handler and throw std::bad_alloc through libstdc++'s own ABI
 * entry points, found as weak symbols, so C programs never pull libstdc++ in. */
#include "modes/alloc.h"

#include <errno.h>

typedef void (*new_handler_fn)(void);
extern new_handler_fn _ZSt15get_new_handlerv(void) __attribute__((weak));
extern void *__cxa_allocate_exception(size_t) __attribute__((weak));
extern void __cxa_throw(void *, void *, void (*)(void *)) __attribute__((weak, noreturn));
extern char _ZTISt9bad_alloc[] __attribute__((weak)); /* typeinfo for std::bad_alloc */
extern char _ZTVSt9bad_alloc[] __attribute__((weak)); /* vtable for std::bad_alloc */
extern void _ZNSt9bad_allocD1Ev(void *) __attribute__((weak));

__attribute__((noreturn)) static void throw_bad_alloc(void) {
    if (__cxa_allocate_exception && __cxa_throw && _ZTISt9bad_alloc && _ZTVSt9bad_alloc &&
        _ZNSt9bad_allocD1Ev) {
        void **exc = __cxa_allocate_exception(sizeof(void *));
        exc[0] = _ZTVSt9bad_alloc + 2 * sizeof(void *); /* vptr: past offset-to-top, RTTI */
        __cxa_throw(exc, _ZTISt9bad_alloc, _ZNSt9bad_allocD1Ev);
    }
    report_fatal("operator new: out of memory and no C++ runtime to throw std::bad_alloc",
                 ENOMEM);
}

static new_handler_fn current_handler(void) {
    return _ZSt15get_new_handlerv ? _ZSt15get_new_handlerv() : 0;
}

static void *new_impl(size_t size, size_t align, bool nothrow, enum alloc_kind kind) {
    for (;;) {
        void *p = align ? alloc_aligned(size, align) : alloc_malloc(size);
        if (p) {
            alloc_note_kind(p, kind);
            return p;
        }
        new_handler_fn h = current_handler();
        if (!h) {
            if (nothrow)
                return 0;
            throw_bad_alloc();
        }
        h();
    }
}

/* new: operator new, new[]: operator new [] (the a in _Zna*); d: sized (with its size n),
 * al: alignment (0: none). */
#define N KIND_NEW
#define A KIND_NEW_ARRAY
#define E __attribute__((visibility("default")))
typedef struct nothrow_t nothrow_t;

E void *_Znwm(size_t n) { return new_impl(n, 0, false, N); }
E void *_Znam(size_t n) { return new_impl(n, 0, false, A); }
E void *_ZnwmRKSt9nothrow_t(size_t n, const nothrow_t *t) { (void)t; return new_impl(n, 0, true, N); }
E void *_ZnamRKSt9nothrow_t(size_t n, const nothrow_t *t) { (void)t; return new_impl(n, 0, true, A); }
E void *_ZnwmSt11align_val_t(size_t n, size_t a) { return new_impl(n, a, false, N); }
E void *_ZnamSt11align_val_t(size_t n, size_t a) { return new_impl(n, a, false, A); }
E void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const nothrow_t *t) {
    (void)t;
    return new_impl(n, a, true, N);
}
E void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const nothrow_t *t) {
    (void)t;
    return new_impl(n, a, true, A);
}

E void _ZdlPv(void *p) { alloc_delete(p, N, false, 0, 0); }
E void _ZdaPv(void *p) { alloc_delete(p, A, false, 0, 0); }
E void _ZdlPvm(void *p, size_t n) { alloc_delete(p, N, true, n, 0); }
E void _ZdaPvm(void *p, size_t n) { alloc_delete(p, A, true, n, 0); }
E void _ZdlPvRKSt9nothrow_t(void *p, const nothrow_t *t) { (void)t; alloc_delete(p, N, false, 0, 0); }
E void _ZdaPvRKSt9nothrow_t(void *p, const nothrow_t *t) { (void)t; alloc_delete(p, A, false, 0, 0); }
E void _ZdlPvSt11align_val_t(void *p, size_t a) { alloc_delete(p, N, false, 0, a); }
E void _ZdaPvSt11align_val_t(void *p, size_t a) { alloc_delete(p, A, false, 0, a); }
E void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t a) { alloc_delete(p, N, true, n, a); }
E void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t a) { alloc_delete(p, A, true, n, a); }
E void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const nothrow_t *t) {
    (void)t;
    alloc_delete(p, N, false, 0, a);
}
E void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const nothrow_t *t) {
    (void)t;
    alloc_delete(p, A, false, 0, a);
}
