#include "base/fmt.h"
#include "os/os.h"

void fmt_char(struct fmt *f, char c) {
    if (f->len < f->cap)
        f->buf[f->len++] = c;
}

void fmt_str(struct fmt *f, const char *s) {
    while (s && *s)
        fmt_char(f, *s++);
}

void fmt_u64(struct fmt *f, uint64_t v) {
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        fmt_char(f, tmp[--n]);
}

void fmt_i64(struct fmt *f, int64_t v) {
    if (v < 0) {
        fmt_char(f, '-');
        fmt_u64(f, (uint64_t)0 - (uint64_t)v);
    } else {
        fmt_u64(f, (uint64_t)v);
    }
}

void fmt_hex(struct fmt *f, uint64_t v) {
    char tmp[20];
    int n = 0;
    do {
        tmp[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    fmt_str(f, "0x");
    while (n)
        fmt_char(f, tmp[--n]);
}

void fmt_flush(struct fmt *f, int fd) {
    os_write_all(fd, f->buf, f->len);
    f->len = 0;
}

void fmt_path_with_pid(const char *in, char *out, size_t cap) {
    struct fmt f = {out, 0, cap - 1};
    for (; *in; in++) {
        if (in[0] == '%' && in[1] == 'p') {
            fmt_u64(&f, (uint64_t)os_getpid());
            in++;
        } else {
            fmt_char(&f, *in);
        }
    }
    out[f.len] = 0;
}
