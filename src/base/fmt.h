/* fmt: formatting into a caller-provided (stack) buffer. No allocation, no stdio, no locale:
 * safe in signal handlers and inside the allocator. */
#ifndef OSCAR_FMT_H
#define OSCAR_FMT_H
#include <stddef.h>
#include <stdint.h>

struct fmt {
    char *buf;
    size_t len, cap;
};
#define FMT_INIT(array) { (array), 0, sizeof(array) }

void fmt_str(struct fmt *f, const char *s);
void fmt_u64(struct fmt *f, uint64_t v);
void fmt_i64(struct fmt *f, int64_t v);
void fmt_hex(struct fmt *f, uint64_t v); /* "0x" + lowercase hex, no padding */
void fmt_char(struct fmt *f, char c);
/* Copy a path, "%p" becoming the pid, so each process of a forking program has its own. */
void fmt_path_with_pid(const char *in, char *out, size_t cap);
/* write() the buffer to fd and empty it. */
void fmt_flush(struct fmt *f, int fd);
#endif
