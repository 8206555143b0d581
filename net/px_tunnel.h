/* A tunnel: bytes relayed unread between two ends (a CONNECT passthrough, a connection after
 * 101 Switching Protocols), with backpressure both ways and half-closes passed on.
 *
 * Each end is an object that owns a socket (a client connection, an upstream connection). It
 * gives the tunnel its operations and reports its socket's events with px_tunnel_* calls; the
 * tunnel writes to the other end and stops reading an end whose peer's queue is full. The
 * tunnel is freed when both ends let go of it (px_tunnel_release). */
#ifndef PX_TUNNEL_H
#define PX_TUNNEL_H

#include <stddef.h>

typedef struct px_tunnel px_tunnel_t;

typedef struct px_tunnel_end {
    void (*write)(void *end, const char *data, size_t len);
    int (*full)(void *end);            /* 1 when its queue is above its high mark */
    void (*read)(void *end, int on);   /* reading on or off */
    void (*shutdown)(void *end);       /* half-close the write side once flushed */
    void (*finish)(void *end);         /* close once flushed */
    void (*close)(void *end);          /* close now */
    void *end;
} px_tunnel_end_t;

/* What a guard (proxy/px_tunguard.c: budgets, the WebSocket secret guard) does with the bytes
 * a side read, instead of the tunnel writing them to the other side at once: it hands on what
 * may go with px_tunnel_pass and may end the tunnel with px_tunnel_cut. free runs when the
 * tunnel is freed. */
typedef struct px_tunnel_hook {
    void (*data)(void *h, px_tunnel_t *t, int side, const char *data, size_t len);
    void (*free)(void *h);
    void *h;
    int ahead; /* the tunnel is made before its ends exist (a passthrough CONNECT's budgets are
                  taken at the CONNECT): a release before any end attached frees it */
} px_tunnel_hook_t;

/* A new tunnel with no ends yet. NULL when out of memory. */
px_tunnel_t *px_tunnel_new(void);

/* Puts hook (copied; its h is taken: hook->free frees it with the tunnel) between the sides.
 * Before any data flows. */
void px_tunnel_set_hook(px_tunnel_t *t, const px_tunnel_hook_t *hook);

/* Writes data (borrowed), read by side, to the other side, with backpressure: what a hook lets
 * go. A no-op once the tunnel closes. */
void px_tunnel_pass(px_tunnel_t *t, int side, const char *data, size_t len);

/* Ends the tunnel: both ends close now, except flush_side (0 or 1; -1 for none), which closes
 * once what was written to it is out. Nothing more is relayed. */
void px_tunnel_cut(px_tunnel_t *t, int flush_side);

/* Attaches e (copied) as side (0 or 1). Once both are attached, both start reading. */
void px_tunnel_attach(px_tunnel_t *t, int side, const px_tunnel_end_t *e);

/* 1 when both ends are attached (data can flow). */
int px_tunnel_ready(const px_tunnel_t *t);

/* Bytes read by side (borrowed): they go to the other side. */
void px_tunnel_data(px_tunnel_t *t, int side, const char *data, size_t len);

/* side's read half ended (UV_EOF), or failed (anything else: both ends close). */
void px_tunnel_eof(px_tunnel_t *t, int side, int err);

/* side's queue drained below its low-water mark: the other side reads again. */
void px_tunnel_drain(px_tunnel_t *t, int side);

/* side's socket is gone (closed): the tunnel closes the other end and forgets this one. The
 * last of the two frees the tunnel. A tunnel made ahead (px_tunnel_hook_t.ahead) that no end
 * was attached to yet is freed at once (its owner gave up before the tunnel began). */
void px_tunnel_release(px_tunnel_t *t, int side);

#endif
