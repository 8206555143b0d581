/* More than one core (`airlock run --workers N`): N-1 worker threads, each running an event loop
 * of its own beside the engine's, with listeners of its own on the engine's addresses
 * (SO_REUSEPORT: the kernel spreads new connections over the loops). A connection lives on the
 * loop that accepted it. What the loops share is the engine's: the configuration, the network
 * logs (their writer threads take lines from any loop), the CA and its leaf cache, the TLS
 * contexts, the scopes (snapshot, budget counters, sandboxes: proxy/px_scope.h says how each is
 * guarded). What each loop has of its own: its connections, its resolver, its upstream pools
 * (one per scope it served) and its metrics counters (added up by the metrics page).
 *
 * The engine's loop keeps what is not per connection: signals and reloads, the DNS responder,
 * the metrics listener, the hold table and its deciders (holds need --workers 1: a worker's
 * request that would be held is refused as if no hold were asked). */
#ifndef PX_WORKER_H
#define PX_WORKER_H

#include <stddef.h>
#include <uv.h>

#include "proxy/px_ctx.h"

typedef struct px_workers px_workers_t;

/* A listener the workers copy: its address (what the engine's is bound to, its port when it
 * asked for 0) and its kind. */
typedef struct px_worker_listen {
    struct sockaddr_storage addr;
    int kind; /* px_listener_kind_t */
} px_worker_listen_t;

/* The number of loops for cfg->workers (0: the CPUs this process may run on), at least 1. */
int px_workers_count(int asked);

/* Opens a TCP listener on addr with SO_REUSEPORT set (so the other loops can bind the same
 * address) on tcp (initialized on its loop). 0, or a negative libuv code. */
int px_worker_listen_reuseport(uv_tcp_t *tcp, const struct sockaddr *addr);

/* Starts n-1 workers sharing the engine context eng (what is shared is read from it), each
 * listening on every address in ls (n_ls of them), and own (the machine's addresses, n_own) refused
 * as upstreams. Returns 0 with *out (NULL when n is 1), or -1 after saying why on stderr. */
int px_workers_start(px_ctx_t *eng, int n, const px_worker_listen_t *ls, size_t n_ls,
                     const struct px_cidr *own, size_t n_own, px_workers_t **out);

/* Tells every worker that the sandboxes were re-read (their connections look again whether they
 * still belong; their pools of removed sandboxes close). From the engine's loop. */
void px_workers_sandboxes_changed(px_workers_t *w);

/* Asks every worker to stop (their listeners close, their connections end as the engine's do).
 * Does not wait. */
void px_workers_stop(px_workers_t *w);

/* Waits for every worker to finish and frees them. NULL is a no-op. */
void px_workers_free(px_workers_t *w);

#endif
