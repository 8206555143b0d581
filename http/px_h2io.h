/* What both HTTP/2 codecs (px_h2: the server side, px_h2cli: the client side) do alike with
 * nghttp2: the body a stream sends, queued until the peer's windows take it (with high and low
 * marks, trailers at its end), and the session's output gathered for the owner's socket. Pure;
 * no I/O. */
#ifndef PX_H2IO_H
#define PX_H2IO_H

#include <nghttp2/nghttp2.h>
#include <stddef.h>
#include <stdint.h>

/* Room for len more bytes after used in *buf of capacity *cap. Returns 0 or -1 (no memory). */
int px_h2io_grow(char **buf, size_t *cap, size_t used, size_t len);

/* 1 for a field HTTP/2 does not carry (RFC 9113 section 8.2.2): an empty name, a pseudo-field
 * (ours to write), a connection-specific one, TE unless "trailers". */
int px_h2io_field_dropped(const char *n, size_t len, const char *v, size_t vlen);

/* A stream's outgoing body. */
typedef struct px_h2io_q {
    char *q;               /* bytes waiting for the peer's windows */
    size_t off, len, cap;
    nghttp2_nv *tnv;       /* trailers, their bytes after the array */
    size_t tn;
    unsigned deferred : 1; /* nghttp2 waits for bytes (nghttp2_session_resume_data) */
    unsigned over_high : 1, drain : 1; /* passed the high mark; then fell below the low one */
} px_h2io_q_t;

/* Bytes queued and not sent yet. */
static inline size_t px_h2io_q_queued(const px_h2io_q_t *q)
{
    return q->len - q->off;
}

/* Queues len bytes (copied). Returns 0, PX_ETOOBIG (the queue would pass max) or PX_ENOMEM;
 * above high, over_high is set. */
int px_h2io_q_push(px_h2io_q_t *q, const char *data, size_t len, size_t max, size_t high);

/* nghttp2's data source over q (the read callback's arguments): gives what is queued, defers
 * while the body goes on (ended 0), ends the stream with the trailers once it ended. Crossing
 * below low after over_high sets drain. */
ssize_t px_h2io_q_read(px_h2io_q_t *q, int ended, size_t low, nghttp2_session *ses, int32_t sid,
                       uint8_t *buf, size_t len, uint32_t *flags);

/* Frees the queue's bytes and trailers. */
void px_h2io_q_free(px_h2io_q_t *q);

/* The session's output, gathered for the owner. handed: what the owner took last (written by
 * the next fill). */
typedef struct px_h2io_out {
    char *buf;
    size_t len, cap, handed;
} px_h2io_out_t;

/* Forgets what the owner took, then gathers frames from nghttp2 up to max bytes. Returns 0, or
 * PX_ENOMEM / PX_EPARSE when the session broke. */
int px_h2io_out_fill(px_h2io_out_t *o, nghttp2_session *ses, size_t max);

/* Frees the output buffer when it holds no frame (len 0). */
void px_h2io_out_trim(px_h2io_out_t *o);

#endif
