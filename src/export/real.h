/* real: libc's own function behind one Oscar wraps (the next definition after liboscar.so,
 * dlsym(RTLD_NEXT)). DECLARE(ret, name, args...) defines real_fn_name(), which finds it at its
 * first call; a file's constructor calls each once at load, so that a wrapper called in a
 * signal handler never runs the loader. */
#ifndef OSCAR_EXPORT_REAL_H
#define OSCAR_EXPORT_REAL_H
#include <dlfcn.h>

#define DECLARE(ret, name, ...)                                                                \
    static ret (*real_##name)(__VA_ARGS__);                                                    \
    static ret (*real_fn_##name(void))(__VA_ARGS__) {                                          \
        if (!real_##name)                                                                      \
            *(void **)&real_##name = dlsym(RTLD_NEXT, #name);                                  \
        return real_##name;                                                                    \
    }
#endif
