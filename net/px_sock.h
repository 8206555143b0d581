/* The socket layer: TCP with optional TLS (memory BIOs), one write queue with high and low water
 * marks, read start/stop, and exactly one close.
 *
 * Small writes are copied and flushed once per loop turn (px_loop.h): what an owner writes in
 * one turn leaves in one write system call. Large ones skip the copy: with TLS a write of a
 * record or more is sealed at once from the caller's buffer (records leave in batches of 64
 * KiB or at the end of the turn); without, a write of 64 KiB or more goes to the kernel at
 * once. Reads deliver plaintext in a buffer
 * borrowed for the call: the owner consumes or copies all of it. Every callback comes from the
 * loop, never from inside a px_sock_* call. A socket is embedded in its owner, which frees itself
 * in on_closed, the last callback. */
#ifndef PX_SOCK_H
#define PX_SOCK_H

#include <openssl/ssl.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "net/px_loop.h"

#define PX_WQ_HIGH (1024 * 1024) /* queued bytes above which the side feeding a socket stops */
#define PX_WQ_LOW (256 * 1024)   /* ... and below which it resumes (on_drain) */
#define PX_SOCK_TLS_ERR_MAX 256  /* why a TLS handshake failed, as text */

typedef struct px_sock px_sock_t;
struct px_tls;

typedef struct px_sock_cbs {
    /* Plaintext arrived (borrowed for the call). Only while reading. */
    void (*on_read)(px_sock_t *s, const char *data, size_t len);
    /* The read side ended: UV_EOF for a clean end, else an error (reset, TLS failure, a failed
     * write). Reading stops; the owner decides what to close. */
    void (*on_eof)(px_sock_t *s, int err);
    /* queued() fell below PX_WQ_LOW after having passed PX_WQ_HIGH. May be NULL. */
    void (*on_drain)(px_sock_t *s);
    /* TLS handshake done (0), or failed (negative; px_sock_tls_error() says why). May be NULL
     * for sockets without TLS. */
    void (*on_handshake)(px_sock_t *s, int status);
    /* px_sock_connect() finished: 0 or a libuv error. May be NULL for accepted sockets. */
    void (*on_connect)(px_sock_t *s, int status);
    /* The handle is closed; nothing else comes. The owner may free the memory now. */
    void (*on_closed)(px_sock_t *s);
} px_sock_cbs_t;

struct px_sock {
    uv_tcp_t tcp;
    px_defer_t defer;
    px_quiet_t quiet; /* TLS: its buffers are given back once the connection is quiet */
    px_loop_t *loop;
    const px_sock_cbs_t *cbs;
    void *data;         /* the owner's */
    struct px_tls *tls; /* NULL without TLS */
    char *out;          /* plaintext written this turn, not yet flushed */
    char *first;        /* ciphertext read before TLS started, for the next turn */
    size_t first_len;
    size_t out_len, out_cap;
    int pending;          /* PX__SOCK_* work for the deferred call */
    int err;              /* an error to report from the deferred call */
    unsigned reading : 1; /* the owner wants reads */
    unsigned uv_reading : 1;
    unsigned tls_done : 1;
    unsigned over_high : 1;
    unsigned closing : 1;
    unsigned close_when_flushed : 1;
    unsigned shut : 1;   /* our side was half-closed */
    unsigned eof : 1;    /* the read side ended */
    unsigned sealed : 1; /* TLS records were written this turn and wait to be sent */
    char *tls_err;       /* why the TLS handshake failed (malloc'd), or NULL */
};

/* Initializes s on the loop (uv_tcp_init). cbs and data are kept. */
void px_sock_init(px_loop_t *l, px_sock_t *s, const px_sock_cbs_t *cbs, void *data);

/* Accepts a connection from server into s (initialized). Returns 0 or a libuv error; on error
 * the caller still closes s. */
int px_sock_accept(px_sock_t *s, uv_stream_t *server);

/* Connects to sa; on_connect fires with the result. Returns 0 or a libuv error (no callback). */
int px_sock_connect(px_sock_t *s, const struct sockaddr *sa);

/* Starts TLS as the server: first[0..len) are bytes already read (the start of the
 * ClientHello, copied), handed to TLS on the next turn; the handshake runs as bytes arrive.
 * app is the SSL's app data (for the callbacks of ctx). Or as the client toward host:port (SNI,
 * verification, session resumption; the ClientHello leaves now), offering ALPN alpn[0..alpn_len)
 * (wire format) instead of the context's when alpn is not NULL. Returns 0 or
 * PX_ENOMEM/PX_ETLS. */
int px_sock_tls_server(px_sock_t *s, SSL_CTX *ctx, void *app, const char *first, size_t len);
int px_sock_tls_client(px_sock_t *s, SSL_CTX *ctx, const char *host, uint16_t port,
                       const unsigned char *alpn, unsigned alpn_len);

/* The SSL of a TLS socket (NULL without TLS). */
SSL *px_sock_ssl(const px_sock_t *s);

/* Why the TLS handshake failed ("" when it did not). */
const char *px_sock_tls_error(const px_sock_t *s);

/* Reading on or off. Plaintext already decrypted but not delivered is delivered on the next
 * turn after px_sock_read_start(). */
void px_sock_read_start(px_sock_t *s);
void px_sock_read_stop(px_sock_t *s);

/* Queues len bytes (copied) to go out this turn. Ignored once closing. */
void px_sock_write(px_sock_t *s, const char *data, size_t len);

/* Bytes written but not yet taken by the kernel. */
size_t px_sock_queued(const px_sock_t *s);

/* 1 when queued() is above PX_WQ_HIGH: the owner stops feeding this socket until on_drain. */
int px_sock_full(const px_sock_t *s);

/* Half-closes our side once everything queued is out (a TLS close_notify first). */
void px_sock_shutdown(px_sock_t *s);

/* Closes once everything queued is out; reading stops now. */
void px_sock_close_when_flushed(px_sock_t *s);

/* Closes now (queued bytes are dropped). Idempotent; on_closed fires once. */
void px_sock_close(px_sock_t *s);

#endif
