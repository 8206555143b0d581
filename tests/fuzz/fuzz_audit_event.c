/* Fuzzes the audit event module: a line audit_event_parse() accepts renders back to the same
 * bytes (the parsed record is the line: nothing is lost or added), its views stay inside the
 * line, and rendering any record into a small buffer stays inside it. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "audit/audit_event.h"

static void fuzz_inside(const char *line, size_t len, audit_str_t v)
{
    if (v.len > 0 && (v.base < line || v.base + v.len > line + len))
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *line = (const char *)data;
    audit_event_t ev;
    if (audit_event_parse(line, size, &ev) != 0 || ev.kind == AUDIT_EV_BLANK)
        return 0;
    const audit_str_t views[] = {ev.method, ev.url,      ev.reason, ev.annot, ev.tail,  ev.host,
                                 ev.text,   ev.dns_type, ev.header, ev.who,   ev.scope, ev.path};
    for (size_t i = 0; i < sizeof(views) / sizeof(views[0]); i++)
        fuzz_inside(line, size, views[i]);
    static char buf[AUDIT_EVENT_LINE_CAP];
    int n = audit_event_render(&ev, buf, sizeof(buf));
    if (n < 0)
        __builtin_trap();
    /* a cut line and a final CR are the two things parsing sets aside */
    size_t want = size;
    if (want > 0 && line[want - 1] == '\r')
        want--;
    if (ev.truncated)
        want -= strlen(AUDIT_EVENT_TRUNC_MARK);
    if ((size_t)n != want || memcmp(buf, line, want) != 0)
        __builtin_trap();
    char small[24];
    n = audit_event_render(&ev, small, sizeof(small));
    if (n < 0 || (size_t)n >= sizeof(small) || small[n] != '\0')
        __builtin_trap();
    return 0;
}
