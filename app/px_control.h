/* The deciders' control socket (`airlock run --control PATH`, docs/approvals.md): a unix stream
 * socket, mode 0600, where `airlock pending`, `airlock approve` and `airlock deny` list and
 * answer the requests the allowlist holds (proxy/px_hold.h). A line protocol: one command per
 * line, answers and (after `follow`) events one per line. Only peers with airlock's own uid
 * (or root) are served; each approval and denial is written to the conversation's network log
 * with the peer's uid. */
#ifndef PX_CONTROL_H
#define PX_CONTROL_H

#include "proxy/px_ctx.h"

typedef struct px_control px_control_t;

/* Listens on path (a stale socket there is replaced; any other file is an error) for ctx's
 * hold table (ctx->holds, set before). 0 with *out, or a negative code (reason on stderr). */
int px_control_start(px_ctx_t *ctx, const char *path, px_control_t **out);

/* Closes the listener and every control connection, removes the socket file; frees c once
 * closed. NULL is a no-op. */
void px_control_stop(px_control_t *c);

/* The client side (the CLI). Connects to path; 0 with *fd, or a negative code. */
int px_control_connect(const char *path, int *fd);

#endif
