/* One audit event: the record of one decision, and the one place that turns it into a
 * network-log line (docs/network-log.md) and reads a line back into it.
 *
 * Pure: audit_event_render() writes into the caller's buffer, audit_event_parse() reads a line;
 * no I/O, no allocation. The proxy's writers fill a record and hand it to px_log_event()
 * (proxy/px_log.h); audit/ (replay, report, suggest) parses the same lines with the same code,
 * so the two can never drift apart. Every field is named, not preformatted, so the same record
 * can later be written in another form (JSON) without re-parsing text. */
#ifndef AUDIT_EVENT_H
#define AUDIT_EVENT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/px_str.h"

/* The longest line text: longer lines are cut here (at a whole \xNN) and end in the mark. */
#define AUDIT_EVENT_TEXT_MAX 8192
#define AUDIT_EVENT_TRUNC_MARK " ...(truncated)"
/* A buffer that always holds a rendered line (text, mark, NUL). */
#define AUDIT_EVENT_LINE_CAP (AUDIT_EVENT_TEXT_MAX + sizeof(AUDIT_EVENT_TRUNC_MARK))

/* A non-owning byte range. In a record built by a writer it holds the raw bytes (rendering
 * escapes them); in a parsed record it points into the line, still escaped (audit_unescape()). */
typedef px_str_t audit_str_t;

/* A C string as a view (NULL: empty). */
audit_str_t audit_s(const char *s);

/* The URL of a line, split (parse only). */
typedef struct audit_url {
    int ok;           /* 1 when the URL was read; else the fields below are empty */
    int authority;    /* 1 for CONNECT's "host:port" form (no scheme, no path) */
    int tls;          /* https:// (and CONNECT) */
    audit_str_t host; /* escaped; without IPv6 brackets */
    int bracketed;    /* the host was written [v6] */
    uint16_t port;    /* the explicit port, else the scheme's default */
    int port_given;
    audit_str_t path; /* path and query as logged (escaped); "*" for OPTIONS * */
    int cut;          /* the proxy cut an over-long URL ("..." at its 2 KiB cap) */
} audit_url_t;

/* What was decided about. The kind picks the line's shape:
 *   TASK_START    "=== TASK START text ==="
 *   REQUEST       "VERDICT METHOD URL -> STATUS|reason[annot][ (tail)]"
 *   CONNECT       the same, method CONNECT, URL host:port
 *   TUNNEL        the same with " tunnel" after the status (a passthrough CONNECT)
 *   CONNECTION    the same shape for a connection or query refused whole (method and URL "-"
 *                 or "DNS -", reason "closed" / "no answer": sandboxes)
 *   DNS           "DNS dns_type host -> reason"
 *   STRIPPED      "STRIPPED header 'header' from METHOD URL (tail)"
 *   COLLAPSED     "COLLAPSED count duplicate 'header' headers in METHOD URL (tail)"
 *   WARNING       "WARNING: tail"
 *   TLS_REJECTED  "TLS REJECTED host (tail)"
 *   GHAPP_TOKEN   "GitHub App token refresh failed for METHOD URL: tail"
 *   GHAPP_REPOS   "GitHub App repo node ID resolution failed: tail"
 *   GRAPHQL_SCOPE "GraphQL repo-scope check failed: tail"
 *   DECISION      "DECISION hID approved|denied METHOD host path by who (scope S, N requests)":
 *                 a held request approved or denied (docs/approvals.md); " scope S, " only for
 *                 an approval, "request" when N is 1 */
typedef enum audit_event_kind {
    AUDIT_EV_NONE = 0, /* parse: not a line airlock writes (see why) */
    AUDIT_EV_BLANK,    /* parse: an empty line */
    AUDIT_EV_TASK_START,
    AUDIT_EV_REQUEST,
    AUDIT_EV_CONNECT,
    AUDIT_EV_TUNNEL,
    AUDIT_EV_CONNECTION,
    AUDIT_EV_DNS,
    AUDIT_EV_STRIPPED,
    AUDIT_EV_COLLAPSED,
    AUDIT_EV_WARNING,
    AUDIT_EV_TLS_REJECTED,
    AUDIT_EV_GHAPP_TOKEN,
    AUDIT_EV_GHAPP_REPOS,
    AUDIT_EV_GRAPHQL_SCOPE,
    AUDIT_EV_DECISION,
} audit_event_kind_t;

/* The last kind: what arrays indexed by kind are sized by (proxy/px_metrics.h). */
#define AUDIT_EV_KIND_LAST AUDIT_EV_DECISION

/* The verdict word of the request-shaped kinds; the other kinds imply theirs (parse sets it:
 * WARNING -> WARN, TLS_REJECTED -> REJECTED, GHAPP_* -> ERROR, GRAPHQL_SCOPE -> BLOCKED, the
 * rest NONE; render ignores it there). A DECISION's is its outcome: ALLOWED (approved) or
 * BLOCKED (denied). */
typedef enum audit_event_verdict {
    AUDIT_EV_V_NONE = 0,
    AUDIT_EV_ALLOWED, /* "allowed" */
    AUDIT_EV_BLOCKED, /* "BLOCKED" */
    AUDIT_EV_ERROR,   /* "ERROR" */
    AUDIT_EV_WARN,
    AUDIT_EV_REJECTED,
} audit_event_verdict_t;

typedef struct audit_event {
    audit_event_kind_t kind;
    audit_event_verdict_t verdict;
    audit_str_t method; /* empty is written "-" */
    audit_str_t url;    /* scheme://host[:port]path, or host:port for CONNECT; empty: "-" */
    int status;         /* 100..999, or -1: reason is written in its place */
    audit_str_t reason; /* instead of a status ("closed", "no answer", an ERROR's whole text);
                           DNS: the answer */
    audit_str_t annot;  /* " [masked: 1] [region: x]" as the addons build it (leading spaces) */
    audit_str_t tail;   /* inside the closing " (...)"; WARNING: the text after "WARNING: " */
    audit_str_t host;   /* DNS: the query name (presentation form); TLS_REJECTED: the SNI;
                           DECISION: the held host */
    audit_str_t dns_type;
    audit_str_t header; /* STRIPPED / COLLAPSED: the header name */
    unsigned count;     /* COLLAPSED: how many; DECISION: requests answered */
    audit_str_t text;   /* TASK_START: the timestamp */
    /* DECISION: the hold's ID (hID), who decided ("uid 1000", "webhook"), the approval's scope
     * ("once", "conversation", "persist"; empty for a denial), the held path (method and host
     * above) and, in count, how many held requests the decision answered */
    uint64_t hold;
    audit_str_t who;
    audit_str_t scope;
    audit_str_t path;
    /* which pipeline stage and allowlist entry decided; JSON only (the text line stays) */
    audit_str_t stage;
    audit_str_t entry;
    /* what an exchange relayed (JSON only): set by the proxy's request lines, never parsed */
    int xfer;             /* 1: the three numbers below are set */
    uint64_t bytes_up;    /* request body bytes sent toward the upstream */
    uint64_t bytes_down;  /* response body bytes sent toward the client */
    uint64_t duration_us; /* the request's head read to its last response byte out */
    audit_str_t upstream; /* the upstream's address as connected: "ip:port", "[v6]:port" */

    /* filled by parse only */
    int truncated;         /* the line was cut (" ...(truncated)"); fields hold what is left */
    const char *why;       /* kind NONE: a short static reason */
    audit_url_t url_parts; /* url split (ok 0 when it was "-" or unreadable) */
    unsigned masked;       /* from [masked: N] */
    unsigned dropped;      /* from [dropped: N] */
} audit_event_t;

/* A request-shaped event: kind, verdict, method and URL (C strings; NULL or "" is written "-"),
 * status (-1: set reason). The rest empty. */
audit_event_t audit_event_access(audit_event_kind_t kind, audit_event_verdict_t verdict,
                                 const char *method, const char *url, int status);

/* The verdict's word ("allowed", "BLOCKED", "ERROR", "WARN"; "" for the others). */
const char *audit_event_verdict_word(audit_event_verdict_t v);

/* Writes ev's line (no newline) into buf (cap bytes, NUL-terminated): every byte that is not
 * printable ASCII becomes \xNN, and a line over AUDIT_EVENT_TEXT_MAX (or cap) is cut at a whole
 * unit and ends in AUDIT_EVENT_TRUNC_MARK. Returns the length, or -1 when cap is too small for
 * even the mark or ev->kind cannot be written. */
int audit_event_render(const audit_event_t *ev, char *buf, size_t cap);

/* Parses s[0..len) (borrowed; no newline; a final CR is ignored) into *ev, whose views point
 * into s. Returns 0, or PX_EPARSE with ev->kind NONE and ev->why set. Never allocates. */
int audit_event_parse(const char *s, size_t len, audit_event_t *ev);

/* Splits a logged URL ("scheme://host[:port]path" or, when authority is 1, "host:port") into
 * *out. Returns 0 or PX_EPARSE. */
int audit_url_parse(audit_str_t url, int authority, audit_url_t *out);

/* Undoes the log's escaping of s into out (cap bytes): \xNN with NN not printable ASCII
 * becomes that byte; any other backslash is literal (the log never escapes a printable byte).
 * Returns the length, or (size_t)-1 when out is too small. */
size_t audit_unescape(audit_str_t s, char *out, size_t cap);

/* 1 when a and b hold the same bytes; b is a NUL-terminated literal. */
int audit_str_eq(audit_str_t a, const char *b);

/* s as a decimal number of 1 to 10 digits, nothing else, at most max: 0 and *v, or PX_EPARSE
 * (*v untouched). */
int audit_str_digits(audit_str_t s, unsigned long max, unsigned long *v);

/* The readers' small steps over a view (static inline: the parsers of a million-line log call
 * them per field). starts: 1 when s begins with the literal p. skip: s without its first n
 * bytes (n <= s.len). find: the position of the literal needle in s, or -1 (also for ""). */
static inline int audit_str_starts(audit_str_t s, const char *p)
{
    size_t n = strlen(p);
    return s.len >= n && memcmp(s.base, p, n) == 0;
}

static inline audit_str_t audit_str_skip(audit_str_t s, size_t n)
{
    s.base += n;
    s.len -= n;
    return s;
}

static inline long audit_str_find(audit_str_t s, const char *needle)
{
    size_t n = strlen(needle);
    if (n == 0 || s.len < n)
        return -1;
    for (size_t i = 0; i + n <= s.len; i++) {
        if (s.base[i] == needle[0] && memcmp(s.base + i, needle, n) == 0)
            return (long)i;
    }
    return -1;
}

#endif
