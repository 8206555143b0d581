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

/* Hard caps (named so that tests and docs can refer to them). */
#define ADDON_MAX_HEADERS 100          /* request headers accepted by the proxy */
#define ADDON_ARENA_MAX (256 * 1024)   /* bytes an addon may allocate per request */
#define ADDON_ANNOT_MAX 512            /* access-line annotation text */

/* A non-owning byte range; no NUL terminator is assumed. */
typedef struct addon_str {
    const char *base;
    size_t len;
} addon_str_t;

typedef struct addon_header {
    addon_str_t name;
    addon_str_t value;
    int removed; /* set by addon_req_remove_header(); skipped when serializing */
} addon_header_t;

typedef struct addon_arena addon_arena_t;

/* Writes one line (without newline) to the network log; used for STRIPPED/COLLAPSED/WARNING. */
typedef void (*addon_log_cb)(void *data, const char *line, size_t len);

typedef struct addon_req {
    addon_str_t method; /* as sent */
    addon_str_t target; /* request-target as sent (origin or absolute form) */
    addon_str_t path;   /* path + query, raw (not decoded); "/" at least */
    addon_str_t host;   /* Host header host: case kept, no port, no IPv6 brackets */
    uint16_t port;      /* effective destination port */
    int tls;            /* 1 when the scheme is https */
    addon_header_t headers[ADDON_MAX_HEADERS + 8]; /* room for a few added headers */
    size_t nheaders;
    addon_arena_t *arena; /* lazily created; freed by addon_req_reset() */
    char annot[ADDON_ANNOT_MAX]; /* " [masked: 1] [region: us-east-1]" */
    size_t annot_len;
    addon_log_cb log_cb; /* may be NULL */
    void *log_data;
} addon_req_t;

/* Clears the view for reuse and frees the arena. */
void addon_req_reset(addon_req_t *req);

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

/* Writes a network-log line through req->log_cb (printf-style). */
void addon_req_log(addon_req_t *req, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* An answer an addon makes itself instead of forwarding (403 JSON and friends). */
typedef struct addon_answer {
    int status;       /* HTTP status; 0 = no answer */
    char *body;       /* JSON body, malloc'd; taken by the proxy */
    size_t body_len;
    char log_tail[160]; /* appended after "-> 403" on the access line, e.g. " (host mismatch: …)" */
} addon_answer_t;

#endif
