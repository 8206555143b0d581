/* One network-log line (docs/network-log.md) read back: a strict parser with caps, no allocation.
 *
 * The proxy escapes every byte of a line that is not printable ASCII as \xNN (px_log.c), so a
 * line is plain ASCII; the views below point into it, still escaped. audit_unescape() turns a
 * field back into the bytes the client sent, for re-deciding. The reading itself is
 * audit_event_parse() (audit_event.h), the module that also writes the lines; this is the view
 * the audit tools were written against. */
#ifndef AUDIT_LINE_H
#define AUDIT_LINE_H

#include <stddef.h>
#include <stdint.h>

#include "audit/audit_event.h"

/* A line longer than this is not a line airlock writes (PX_LOG_LINE_MAX is 8192 bytes before
 * the " ...(truncated)" mark): it is refused whole. */
#define AUDIT_LINE_MAX (8192 + 64)
#define AUDIT_METHOD_MAX 32 /* the proxy keeps 23 bytes of a method */
#define AUDIT_HOST_MAX 255  /* a host name, once unescaped */

typedef enum audit_line_kind {
    AUDIT_LINE_MALFORMED = 0, /* not a line airlock writes; see why */
    AUDIT_LINE_BLANK,
    AUDIT_LINE_TASK_START,   /* === TASK START ts === */
    AUDIT_LINE_ACCESS,       /* allowed|BLOCKED|ERROR METHOD URL -> ... */
    AUDIT_LINE_DNS,          /* DNS TYPE NAME -> ANSWER */
    AUDIT_LINE_STRIPPED,     /* STRIPPED header 'h' from METHOD URL (...) */
    AUDIT_LINE_COLLAPSED,    /* COLLAPSED N duplicate 'h' headers in METHOD URL (...) */
    AUDIT_LINE_WARNING,      /* WARNING: text */
    AUDIT_LINE_TLS_REJECTED, /* TLS REJECTED host (reason) */
    AUDIT_LINE_DECISION      /* DECISION hID approved|denied METHOD host path by who (...) */
} audit_line_kind_t;

typedef enum audit_verdict {
    AUDIT_ALLOWED = 0,
    AUDIT_BLOCKED,
    AUDIT_ERROR,
    AUDIT_WARNED, /* WARN: forwarded in warn mode; the allowlist would have blocked it */
} audit_verdict_t;

typedef struct audit_line {
    audit_line_kind_t kind;
    const char *why; /* MALFORMED: a short static reason */
    int truncated;   /* the proxy cut the line (" ...(truncated)"); kept as is below */

    /* ACCESS (method and url also for STRIPPED and COLLAPSED; a DECISION's verdict is ALLOWED
     * for an approval, BLOCKED for a denial, its method the held request's) */
    audit_verdict_t verdict;
    audit_str_t method;   /* "-" when the proxy never read one */
    audit_str_t url_text; /* as logged; "-" when none */
    audit_url_t url;
    int status;        /* 100..999, or -1 when the line carries an error text instead */
    audit_str_t annot; /* " [masked: 1] [region: x]" as logged, or empty */
    unsigned masked;   /* from [masked: N] */
    unsigned dropped;  /* from [dropped: N] */
    audit_str_t tail;  /* inside " (...)"; or the error text when status is -1 */
    int tunnel;        /* " tunnel" (passthrough CONNECT) */

    /* DNS */
    audit_str_t dns_type;   /* "A", "AAAA", "?" ... */
    audit_str_t dns_name;   /* presentation form (\DDD escapes kept) */
    audit_str_t dns_answer; /* an address or a status word */

    /* STRIPPED / COLLAPSED */
    audit_str_t header; /* the header name */
    unsigned count;     /* COLLAPSED: how many; DECISION: the requests it answered */

    /* TASK_START: the timestamp; WARNING: the text; TLS_REJECTED: host and reason; DECISION:
     * who decided and the approval's scope (empty for a denial) */
    audit_str_t text;
    audit_str_t reason;
} audit_line_t;

/* Parses s[0..len) (borrowed; no newline; no NUL assumed) into *out, whose views point into
 * s. Returns 0, or PX_EPARSE with out->kind MALFORMED and out->why set. Never allocates. */
int audit_line_parse(const char *s, size_t len, audit_line_t *out);

#endif
