/* Fuzzes the JSON rendering of audit events: a record made of arbitrary bytes (every field,
 * raw or in the log's escaped form, any size) always renders to one valid JSON object (parsed
 * by jansson, no raw control byte, within AUDIT_JSON_LINE_MAX and the buffer), and the object
 * read back (audit_jread_line) is the record's own text line unless a string had to be cut.
 * The input is also read as a JSON line, as the audit tools read one: never a crash. */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "audit/audit_event.h"
#include "audit/audit_jread.h"
#include "audit/audit_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The next field: bytes up to a 0x00 separator (or the end). */
static audit_str_t fuzz_field(const uint8_t **p, const uint8_t *end)
{
    const uint8_t *s = *p;
    const uint8_t *z = memchr(s, 0, (size_t)(end - s));
    const uint8_t *e = z != NULL ? z : end;
    *p = z != NULL ? z + 1 : end;
    return (audit_str_t){(const char *)s, (size_t)(e - s)};
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char js[AUDIT_JSON_LINE_CAP], text[AUDIT_EVENT_LINE_CAP], back[AUDIT_EVENT_LINE_CAP];
    if (size > 0 && data[0] == '{') /* a JSON line as the tools read it */
        (void)audit_jread_line((const char *)data, size, back, sizeof(back));
    if (size < 4)
        return 0;
    audit_event_t ev;
    memset(&ev, 0, sizeof(ev));
    ev.kind = (audit_event_kind_t)(data[0] % (AUDIT_EV_KIND_LAST + 2));
    ev.verdict = (audit_event_verdict_t)(data[1] % (AUDIT_EV_REJECTED + 1));
    ev.status = data[2] & 1 ? -1 : 100 + data[2];
    ev.count = data[3];
    ev.hold = (uint64_t)data[2] << (data[3] & 31);
    audit_json_ctx_t ctx = {.time_ms = (int64_t)data[1] * 86400000LL * 365 * 37,
                            .escaped = data[3] & 1};
    const uint8_t *p = data + 4, *end = data + size;
    audit_str_t *fields[] = {&ev.method, &ev.url,      &ev.reason, &ev.annot,    &ev.tail,
                             &ev.host,   &ev.text,     &ev.header, &ev.dns_type, &ev.stage,
                             &ev.entry,  &ctx.sandbox, &ev.who,    &ev.scope,    &ev.path};
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        *fields[i] = fuzz_field(&p, end);
    const size_t caps[] = {sizeof(js), 4096 + (data[2] & 0x3f) * 64};
    for (size_t c = 0; c < 2; c++) {
        int n = audit_json_render(&ev, &ctx, js, caps[c]);
        if (n < 0)
            continue;
        if ((size_t)n >= caps[c] || (size_t)n > AUDIT_JSON_LINE_MAX || js[n] != '\0')
            __builtin_trap();
        for (int i = 0; i < n; i++)
            if ((unsigned char)js[i] < 0x20 || js[i] == 0x7f)
                __builtin_trap(); /* one line, no terminal control */
        json_error_t e;
        json_t *o = json_loadb(js, (size_t)n, JSON_REJECT_DUPLICATES, &e);
        if (!json_is_object(o))
            __builtin_trap();
        int cut = json_object_get(o, "truncated") != NULL;
        json_decref(o);
        /* the text line of the record, through its JSON; raw records only: the escaped form
         * is one-to-one with the bytes only for lines the proxy wrote */
        int t = audit_event_render(&ev, text, sizeof(text));
        if (c == 0 && !cut && !ctx.escaped && t >= 0) {
            int b = audit_jread_line(js, (size_t)n, back, sizeof(back));
            if (b != t || memcmp(back, text, (size_t)t) != 0)
                __builtin_trap();
        }
    }
    int n = audit_json_render_other(ev.tail.base, ev.tail.len, &ctx, js, sizeof(js));
    json_error_t e;
    json_t *o = n > 0 ? json_loadb(js, (size_t)n, 0, &e) : NULL;
    if (n < 0 || !json_is_object(o))
        __builtin_trap();
    json_decref(o);
    return 0;
}
