/* messages: see messages.h. */
#include "base/messages.h"

static const char *const msg_text[MSG_COUNT] = {
#define MESSAGE(id, kind, text, doc, then, when) [MSG_##id] = text,
#include "base/messages.def"
#undef MESSAGE
};

void msg_start(struct fmt *f, enum msg_id id) {
    fmt_str(f, "oscar: ");
    fmt_str(f, msg_text[id]);
}
