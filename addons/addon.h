/* The addon interface: how a request looks to the policy and credential addons.
 *
 * An addon never sees a connection. proxy/ parses a request head, fills an addon_req_t whose
 * strings point into the head buffer (borrowed for the request's life), runs the addons, and
 * serializes the (possibly rewritten) header list upstream. Values an addon creates live in
 * the request's arena and are freed with the request. */
#ifndef ADDON_H
#define ADDON_H

#include <stddef.h>
#include <stdint.h>

#include "base/px_str.h"

/* Hard caps (named so that tests and docs can refer to them). */
#define ADDON_MAX_HEADERS 100        /* request headers accepted by the proxy */
#define ADDON_ARENA_MAX (256 * 1024) /* bytes an addon may allocate per request */
#define ADDON_ANNOT_MAX 512          /* access-line annotation text */

/* A non-owning byte range; no NUL terminator is assumed (base/px_str.h). */
typedef px_str_t addon_str_t;

typedef struct addon_header {
    addon_str_t name;
    addon_str_t value;
    int removed; /* set by addon_req_remove_header(); skipped when serializing */
} addon_header_t;

typedef struct addon_arena addon_arena_t;

struct addon_policy;
struct addon_replacements;

/* The configuration a request is decided under: one immutable, refcounted snapshot per
 * (re)load, kept by the request from its head to its end (SIGHUP swaps the proxy's pointer). */
typedef struct addon_config {
    struct addon_policy *policy;             /* never NULL (an empty policy blocks all) */
    struct addon_replacements *replacements; /* NULL: no credentials to swap */
} addon_config_t;

/* How the proxy moves the request body. */
typedef enum addon_body_mode {
    ADDON_BODY_PASS = 0, /* relayed untouched (the fast path) */
    ADDON_BODY_STREAM,   /* each piece goes through on_request_body before it is relayed */
    ADDON_BODY_BUFFER,   /* gathered whole (up to body_cap) before the head is sent */
} addon_body_mode_t;

/* A network-log line an addon asks for, as named fields: the proxy turns it into its one audit
 * event (audit/audit_note.h) and writes it; no addon formats a log line. */
typedef enum addon_note_kind {
    ADDON_NOTE_STRIPPED = 1,  /* a foreign credential header removed: header, tail */
    ADDON_NOTE_COLLAPSED,     /* duplicate credential headers made one: header, count, tail */
    ADDON_NOTE_WARNING,       /* tail */
    ADDON_NOTE_GHAPP_TOKEN,   /* a GitHub App token refresh failed: tail (why) */
    ADDON_NOTE_GHAPP_REPOS,   /* repo node ID resolution failed: tail */
    ADDON_NOTE_GRAPHQL_SCOPE, /* the GraphQL repo-scope check failed: tail */
} addon_note_kind_t;

typedef struct addon_note {
    addon_note_kind_t kind;
    addon_str_t method; /* the request's (STRIPPED, COLLAPSED, GHAPP_TOKEN) */
    addon_str_t url;    /* its log URL (req->url), empty: "-" */
    addon_str_t header; /* STRIPPED, COLLAPSED: the header's name as it may be logged */
    unsigned count;     /* COLLAPSED */
    addon_str_t tail;   /* the line's text in parentheses, or after its colon */
} addon_note_t;

typedef void (*addon_log_cb)(void *data, const addon_note_t *note);

#define ADDON_READINGS_MAX 8 /* readings of a path: every subset of base/px_path.h's three */

struct addon_policy_graphql;

/* The canonical request: the one read-only view of a request every stage and addon reads,
 * built once after parsing (addon_req_view() makes its derived parts). No addon re-parses the
 * raw target or re-normalizes the host: it reads host_norm and the readings. */
typedef struct addon_req {
    addon_str_t method; /* as sent */
    addon_str_t target; /* request-target as sent (origin or absolute form) */
    addon_str_t path;   /* path + query, raw (not decoded); "/" at least */
    addon_str_t host;   /* Host header host: case kept, no port, no IPv6 brackets */
    uint16_t port;      /* effective destination port */
    int tls;            /* 1 when the scheme is https */
    /* made by addon_req_view(); until then (view 0) the accessors below derive them again */
    int view;              /* 1: host_norm and the readings are made */
    addon_str_t host_norm; /* the host normalized once (base/px_host.h); empty: not a name */
    addon_str_t readings[ADDON_READINGS_MAX]; /* the path part decoded, as sent first, then each
                                                 distinct reading (base/px_path.h) */
    size_t nreadings; /* 0 with view 1: the path is over PX_PATH_ANY_MAX (unreadable) */
    /* the allowlist's decision, made once by the allowlist addon: later addons read it */
    int decided;
    int allowed;
    const struct addon_policy_graphql *graphql; /* the graphql block of the entry that allowed */
    int warn; /* warn mode let it go on (the allowlist would block it): logged WARN */
    /* the entry that decided, for the audit event: the one that allowed, or the block entry
     * that refused (addon_policy_kind_t, 0: none; its index in that list) */
    int entry_kind;
    size_t entry_index;
    int hold_seconds; /* the allowlist blocked it and says `on_block: hold`: it may be held this
                         long for a decider (never for a pre-check); 0: not */
    addon_header_t headers[ADDON_MAX_HEADERS + 8]; /* room for a few added headers */
    size_t nheaders;
    addon_arena_t *arena;        /* lazily created; freed by addon_req_reset() */
    char annot[ADDON_ANNOT_MAX]; /* " [masked: 1] [region: us-east-1]" */
    size_t annot_len;
    addon_log_cb log_cb; /* may be NULL */
    void *log_data;
    const addon_config_t *config; /* the snapshot this request is decided under */
    const char *url;              /* the log line's URL: scheme://host[:port]path?query, as sent */
    int credentials_done; /* one credential mechanism per request: set by the one that ran */
    addon_body_mode_t body_mode;
    uint64_t body_cap;   /* ADDON_BODY_BUFFER: more than this is answered 413 */
    uint64_t filter_cap; /* set by a body filter's on_request_head: the body is gathered whole
                            (up to the largest cap asked) and filtered before the credential
                            addon's body hooks and before the head goes upstream */
    void *state;         /* the credential addon's per-request state (freed by on_end) */
    const struct addon *state_owner;
} addon_req_t;

/* Clears the view for reuse and frees the arena. The header slots past nheaders and the
 * annotation past annot_len are left as they are. */
void addon_req_reset(addon_req_t *req);

/* A new view (malloc'd, free() it after addon_req_reset()), as addon_req_reset() leaves one:
 * not the whole ~4 KB cleared for every request. NULL when memory ran out. */
addon_req_t *addon_req_new(void);

/* Makes the view's derived parts from path and host: the normalized host (unless the caller
 * set host_norm, normalized the same way: the proxy's pre-check did) and the path's readings
 * (decoded once; copied only when a reading differs from the raw path part).
 * Returns 0, or PX_ENOMEM (the view stays unmade: the accessors then derive again). */
int addon_req_view(addon_req_t *req);

/* Calls pred on each reading of req's path (query excluded), as base/px_path.h's px_path_any()
 * does; returns the first nonzero result, else 0; 1 for an unreadable (over-long) path. */
int addon_req_path_any(const addon_req_t *req, int (*pred)(const char *path, size_t len, void *ctx),
                       void *ctx);

/* 1 when a reading of req's path is the feature path base (px_path_under()'s rule). */
int addon_req_path_under(const addon_req_t *req, const char *base);

/* 1 when req's normalized host is name (a lowercase NUL-terminated host name). */
int addon_req_host_is(const addon_req_t *req, const char *name);

/* Copies len bytes into the request's arena; returns NULL when the arena cap is reached. */
char *addon_req_dup(addon_req_t *req, const char *s, size_t len);

/* Index of the first live header named name (case-insensitive) at or after from, or -1. */
int addon_req_find(const addon_req_t *req, const char *name, size_t from);

/* Replaces the value of header idx with a copy of value. 0 or PX_ENOMEM/PX_ETOOBIG. */
int addon_req_set_value(addon_req_t *req, size_t idx, const char *value, size_t len);

/* Marks header idx removed. */
void addon_req_remove_header(addon_req_t *req, size_t idx);

/* Appends a header (copied). 0 or PX_ETOOBIG when the header array is full. */
int addon_req_add_header(addon_req_t *req, const char *name, size_t nlen, const char *value,
                         size_t vlen);

/* Appends " [text]" to the access-line annotations (printf-style); truncates at the cap. */
void addon_req_annotate(addon_req_t *req, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Asks for a network-log line through req->log_cb: kind, the header and count where the kind
 * has them (else NULL, 0), the tail printf-style; method and URL are req's. */
void addon_req_note(addon_req_t *req, addon_note_kind_t kind, const char *header, unsigned count,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* The same with the URL given (NULL: "-") instead of req's. */
void addon_req_note_at(addon_req_t *req, const char *url, addon_note_kind_t kind,
                       const char *header, unsigned count, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* An answer an addon makes itself instead of forwarding. The proxy writes the JSON body
 * {"error": error, ["host", "path", "method" when with_request,] "message": message} and the
 * log line "<verdict> METHOD URL -> status<annotations><log_tail>". */
typedef struct addon_answer {
    int status;        /* HTTP status */
    const char *error; /* static text, e.g. "blocked_by_network_allowlist" */
    int with_request;  /* add the request's host, path and method to the body */
    char message[512];
    const char *verdict; /* "BLOCKED" or "ERROR" (static) */
    char log_tail[200];  /* e.g. " (signing failed: ...)"; may be empty */
    int with_detail;     /* add "detail": detail after "message" (body filters) */
    char detail[256];
    const char *reason; /* static; NULL: none. "reason": it, last (a held request's end) */
} addon_answer_t;

/* Where a body-rewriting addon writes its output. write returns 0 or a negative code. */
typedef struct addon_sink {
    int (*write)(void *data, const char *buf, size_t len);
    void *data;
} addon_sink_t;

typedef enum addon_result {
    ADDON_NEXT = 0,      /* go on with the next addon / forward */
    ADDON_ANSWER = 1,    /* ans is filled: answer it, forward nothing */
    ADDON_REWRITTEN = 2, /* on_request_body_filter: out holds the new body */
} addon_result_t;

/* One addon. Hooks may be NULL. Negative returns mean an internal failure (the proxy then
 * answers 502 and logs an ERROR line; nothing is forwarded). */
typedef struct addon {
    const char *name;
    /* The request head passed the proxy's pre-checks (Host, CONNECT, mismatches). May rewrite
     * headers, set body_mode/body_cap, keep per-request state in req->state. */
    int (*on_request_head)(const struct addon *self, addon_req_t *req, addon_answer_t *ans);
    /* ADDON_BODY_STREAM: body bytes (HTTP framing removed); the output goes to out. For
     * ADDON_BODY_BUFFER the whole body arrives in one call. data is borrowed. */
    int (*on_request_body)(const struct addon *self, addon_req_t *req, const char *data, size_t len,
                           const addon_sink_t *out);
    /* The body ended (also for empty bodies). In ADDON_BODY_BUFFER mode the head has not been
     * sent yet and may still be rewritten; an answer is still possible then. */
    int (*on_request_body_end)(const struct addon *self, addon_req_t *req, const addon_sink_t *out,
                               addon_answer_t *ans);
    /* A request-body filter, called (in list order, each seeing the previous one's output)
     * when some filter set filter_cap: the whole body in data[0..len) (borrowed), or data NULL
     * when the body went over the gathered cap (len: the bytes seen so far). Returns ADDON_NEXT
     * (forward unchanged; also when the filter does not apply), ADDON_REWRITTEN (the new body
     * was written to out) or ADDON_ANSWER (ans filled, usually 403 with a detail). */
    int (*on_request_body_filter)(const struct addon *self, addon_req_t *req, const char *data,
                                  size_t len, const addon_sink_t *out, addon_answer_t *ans);
    /* The response head arrived (status as sent by upstream). */
    void (*on_response_head)(const struct addon *self, addon_req_t *req, int status);
    /* The request is over (answered, relayed or failed): free req->state here. */
    void (*on_request_end)(const struct addon *self, addon_req_t *req);
} addon_t;

#endif
