/* A message head as parsed: its bytes, kept in one owned buffer, and spans into them. Trailer
 * fields have their own, smaller container. Both are plain data: no I/O. */
#ifndef PX_MSG_H
#define PX_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "base/px_limits.h"

/* A span of a message buffer, as offsets (the buffer may move while it grows). */
typedef struct px_span {
    uint32_t off;
    uint32_t len;
} px_span_t;

enum {
    PX_MSG_CHUNKED = 1,        /* Transfer-Encoding: chunked */
    PX_MSG_LENGTH = 2,         /* a Content-Length (in length) */
    PX_MSG_KEEPALIVE = 4,      /* the connection may carry another message after this one */
    PX_MSG_UPGRADE = 8,        /* an Upgrade (or CONNECT) request, or a 101 response */
    PX_MSG_NO_BODY = 16,       /* no body whatever the fields say (HEAD, 1xx, 204, 304) */
    PX_MSG_UNTIL_CLOSE = 32,   /* a response whose body ends when the connection does */
};

typedef struct px_msg {
    char *buf;              /* the head's bytes (owned) */
    size_t len;
    int is_request;
    int method;             /* llhttp_method_t for requests */
    int status;             /* responses */
    int major, minor;       /* HTTP version */
    px_span_t target;       /* the request-target, or the reason phrase of a response */
    unsigned flags;         /* PX_MSG_* */
    uint64_t length;        /* with PX_MSG_LENGTH */
    size_t n;
    px_span_t names[PX_HEADERS_MAX];
    px_span_t values[PX_HEADERS_MAX];
} px_msg_t;

/* Trailer fields of a chunked message: "name: value" pairs in their own buffer. */
typedef struct px_fields {
    char buf[PX_TRAILER_MAX];
    size_t len;
    size_t n;
    px_span_t names[PX_TRAILERS_MAX];
    px_span_t values[PX_TRAILERS_MAX];
} px_fields_t;

/* Frees m's buffer and m (NULL is fine). */
void px_msg_free(px_msg_t *m);

/* 1 when span s of m equals lit, case-insensitively. */
int px_msg_span_ieq(const px_msg_t *m, px_span_t s, const char *lit);

/* Index of the first field named name (case-insensitive), or -1. */
int px_msg_find(const px_msg_t *m, const char *name);

/* Fields named name. */
int px_msg_count(const px_msg_t *m, const char *name);

/* A view of span s of m. */
static inline const char *px_msg_at(const px_msg_t *m, px_span_t s)
{
    return m->buf + s.off;
}

#endif
