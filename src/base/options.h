/* options: OSCAR_* settings, read once from environ at initialisation (before libc may be
 * fully ready, so no getenv/stdio). The rows live in options.def. */
#ifndef OSCAR_OPTIONS_H
#define OSCAR_OPTIONS_H

enum option_id {
#define OSCAR_OPTION(id, env, kind, def, min, max, choices, desc) OPT_##id,
#include "base/options.def"
#undef OSCAR_OPTION
    OPT_COUNT
};

/* Parse the environment; a bad value gets one warning line on stderr and the default. In a
 * secure-execution process (AT_SECURE: setuid, setgid, file capabilities) every setting is
 * ignored, silently. */
void options_init(char **env);
long options_int(enum option_id id);
/* NULL when unset (or for non-string options). Points into environ. */
const char *options_string(enum option_id id);
#endif
