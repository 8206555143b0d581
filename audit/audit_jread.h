/* A JSON event line (audit_json.h, docs/events.md) read back into the text line of the same
 * decision, so the audit tools (replay, report, suggest) read both formats through the one
 * text parser (audit_event_parse()) and cannot tell them apart. */
#ifndef AUDIT_JREAD_H
#define AUDIT_JREAD_H

#include <stddef.h>

/* Writes the text line of the JSON object s[0..len) (borrowed) into out (cap bytes,
 * NUL-terminated), escaped and cut as the proxy writes it (audit_event_render()). Returns its
 * length, or -1 when s is not an event object of a known version and kind, or out is too
 * small. Allocates while parsing (jansson); frees before returning. */
int audit_jread_line(const char *s, size_t len, char *out, size_t cap);

#endif
