/* One audit event as a JSON object (docs/events.md, schema docs/events.schema.json): the same
 * record the text line is rendered from (audit_event.h), written as one line of JSON for log
 * pipelines (`airlock run --log-format json`, `--events FILE`).
 *
 * Pure: writes into the caller's buffer; no I/O, no allocation. Strings are escaped per
 * RFC 8259; well-formed UTF-8 is kept (C0 and C1 controls and DEL as \u00XX, but NUL), and a
 * byte that is not part of well-formed UTF-8, or NUL, is written as the four characters \xNN
 * (JSON "\\xNN"), which is how the text log writes it too (docs/events.md: a consumer may
 * refuse \u0000 or cut a string at it). The object never holds a secret value: it is made
 * of the record's fields, and the record never holds one. */
#ifndef AUDIT_JSON_H
#define AUDIT_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "audit/audit_event.h"

/* The schema's version, the object's "v" (2 added bytes_up, bytes_down, duration_ms,
 * upstream_addr, stage, entry). The readers take every version up to this one
 * (docs/events.md, "Versioning"). */
#define AUDIT_JSON_VERSION 2
/* The longest JSON line (no newline). A longer object has its strings cut (at a whole
 * character) and carries "truncated": true; it is still valid JSON. */
#define AUDIT_JSON_LINE_MAX (32 * 1024)
/* A buffer that always holds one rendered object and its NUL. */
#define AUDIT_JSON_LINE_CAP (AUDIT_JSON_LINE_MAX + 1)

/* What the record does not carry: when and where the event happened. */
typedef struct audit_json_ctx {
    int64_t time_ms;     /* milliseconds since the epoch, UTC (clamped to years 1970..9999) */
    audit_str_t sandbox; /* the sandbox the log belongs to (--sandboxes); empty: none */
    int escaped;         /* 1: the record's views hold the log's \xNN form (a parsed line) */
} audit_json_ctx_t;

/* Writes ev as one JSON object (no newline) into buf (cap bytes, NUL-terminated), at most
 * AUDIT_JSON_LINE_MAX bytes. ctx is borrowed (NULL: time 0, no sandbox, raw views). Returns the
 * length, or -1 when cap is too small for an object (below 4096) or ev->kind cannot be
 * written. */
int audit_json_render(const audit_event_t *ev, const audit_json_ctx_t *ctx, char *buf, size_t cap);

/* Writes a line that is not an event (audit_event_parse() refused it; already escaped as the
 * text log writes it) as the object {"v":2,"time":...,"kind":"other","text":LINE}. Same
 * returns as audit_json_render(). */
int audit_json_render_other(const char *line, size_t len, const audit_json_ctx_t *ctx, char *buf,
                            size_t cap);

/* The kind's name in the JSON ("request", "dns", ...; NULL for NONE and BLANK). */
const char *audit_json_kind_name(audit_event_kind_t kind);

#endif
