/* report: see report.h. */
#include "report.h"
#include "fmt.h"
#include "os.h"

#include <stdlib.h>

static const char *caller_name[] = {"free", "realloc", "malloc_usable_size"};

/* "0xADDR is located N bytes inside of M-byte region [0xS,0xE)" (AddressSanitizer's words). */
static void describe_location(struct fmt *f, uintptr_t addr, const struct object_info *o) {
    fmt_hex(f, addr);
    fmt_str(f, " is located ");
    fmt_u64(f, addr - o->start);
    fmt_str(f, " bytes inside of ");
    fmt_u64(f, o->size);
    fmt_str(f, "-byte region [");
    fmt_hex(f, o->start);
    fmt_char(f, ',');
    fmt_hex(f, o->start + o->size);
    fmt_str(f, ")\n");
}

void report_bad_pointer(uintptr_t addr, struct object_info o, enum report_caller who) {
    char buf[1024];
    struct fmt f = FMT_INIT(buf);
    bool at_start = o.start == addr;
    switch (o.state) {
    case OBJ_FREED:
    case OBJ_QUARANTINED:
        if (at_start) {
            fmt_str(&f, "oscar: double-free on address ");
            fmt_hex(&f, addr);
        } else {
            fmt_str(&f, "oscar: invalid-free on address ");
            fmt_hex(&f, addr);
            fmt_str(&f, " (interior pointer)");
        }
        break;
    case OBJ_LIVE:
        fmt_str(&f, "oscar: invalid-free on address ");
        fmt_hex(&f, addr);
        fmt_str(&f, " (interior pointer)");
        break;
    case OBJ_NEVER:
        fmt_str(&f, "oscar: invalid-free on address ");
        fmt_hex(&f, addr);
        fmt_str(&f, " (never allocated)");
        break;
    case OBJ_NOT_OURS:
        fmt_str(&f, "oscar: invalid-free on address ");
        fmt_hex(&f, addr);
        fmt_str(&f, " (not allocated by oscar)");
        break;
    }
    fmt_char(&f, '\n');
    if (o.state == OBJ_FREED || o.state == OBJ_QUARANTINED || o.state == OBJ_LIVE) {
        describe_location(&f, addr, &o);
        fmt_str(&f, o.state == OBJ_LIVE ? "the region is allocated" : "the region was freed");
        fmt_str(&f, "; the bad pointer was passed to ");
    } else {
        fmt_str(&f, "the bad pointer was passed to ");
    }
    fmt_str(&f, caller_name[who]);
    fmt_str(&f, "()\n");
    fmt_flush(&f, 2);
    abort();
}

bool report_fault(uintptr_t addr, bool write) {
    struct object_info o = object_describe(addr);
    if (o.state != OBJ_FREED && o.state != OBJ_NEVER)
        return false;
    char buf[1024];
    struct fmt f = FMT_INIT(buf);
    fmt_str(&f, o.state == OBJ_FREED ? "oscar: heap-use-after-free on address "
                                     : "oscar: wild-access on address ");
    fmt_hex(&f, addr);
    fmt_str(&f, write ? " (WRITE)\n" : " (READ)\n");
    if (o.state == OBJ_FREED) {
        describe_location(&f, addr, &o);
        fmt_str(&f, "the region was freed; its shadow page is revoked\n");
    } else {
        fmt_str(&f, "the address is inside oscar's heap but no object was ever allocated "
                    "there (wild or overflowed pointer)\n");
    }
    fmt_str(&f, "thread ");
    fmt_i64(&f, os_gettid());
    fmt_char(&f, '\n');
    fmt_flush(&f, 2);
    return true;
}

void report_fatal(const char *what, int err) {
    char buf[512];
    struct fmt f = FMT_INIT(buf);
    fmt_str(&f, "oscar: fatal: ");
    fmt_str(&f, what);
    fmt_str(&f, " (errno ");
    fmt_i64(&f, err);
    fmt_str(&f, ")\n");
    fmt_flush(&f, 2);
    abort();
}
