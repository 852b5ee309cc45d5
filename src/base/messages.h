/* messages: the first words of every line Oscar prints (base/messages.def, the one table). */
#ifndef OSCAR_MESSAGES_H
#define OSCAR_MESSAGES_H
#include "base/fmt.h"

enum msg_id {
#define MESSAGE(id, kind, text, doc, then, when) MSG_##id,
#include "base/messages.def"
#undef MESSAGE
    MSG_COUNT
};

/* Appends "oscar: " and the message's fixed text; the caller adds the variable parts. */
void msg_start(struct fmt *f, enum msg_id id);
#endif
