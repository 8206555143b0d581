#include "app/px_worker.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "app/px_sandbox.h"
#include "base/px_err.h"
#include "base/px_limits.h"
#include "dns/dns_resolve.h"
#include "proxy/px_client.h"
#include "proxy/px_log.h"
#include "proxy/px_metrics.h"
#include "proxy/px_upstream.h"

#define PX__WORKER_LISTENERS 8

typedef struct px__wpool {
    px_scope_t *scope; /* a reference while the pool lives */
    px_upmgr_t *up;
} px__wpool_t;

typedef struct px__wlisten {
    uv_tcp_t tcp;
    struct px_worker *w;
    px_listener_kind_t kind;
} px__wlisten_t;

typedef struct px_worker {
    px_ctx_t ctx; /* first: the loop's own context */
    px_workers_t *set;
    uv_loop_t uv;
    pthread_t thread;
    int started;
    uv_async_t wake;  /* the engine's requests (the flags below) */
    int want_stop;    /* atomic */
    int want_changed; /* atomic: the sandboxes were re-read */
    px__wlisten_t ls[PX__WORKER_LISTENERS];
    int nls;
    uv_check_t log_kick;
    uv_timer_t log_timer;
    dns_resolver_t *resolver;
    px_upmgr_t *up;     /* the one conversation's pool on this loop */
    px__wpool_t *pools; /* sandboxes' pools on this loop */
    size_t npools, cap;
    px_metrics_t metrics;
} px_worker_t;

struct px_workers {
    px_ctx_t *eng; /* the engine's context (what the workers share) */
    px_worker_t **w;
    size_t n;
    size_t conns_all; /* every loop's connections (px_ctx_t.conns_all) */
    uint64_t accepted_all;
    const struct px_cidr *own; /* the machine's addresses, refused upstream (the engine's) */
    size_t n_own;
};

int px_workers_count(int asked)
{
    if (asked > 0)
        return asked;
    cpu_set_t set;
    int n = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
    return n < 1 ? 1 : n > PX_WORKERS_MAX ? PX_WORKERS_MAX : n;
}

int px_worker_listen_reuseport(uv_tcp_t *tcp, const struct sockaddr *addr)
{
    int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int on = 1;
    socklen_t len =
        addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    int rc = 0;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on)) != 0 || bind(fd, addr, len) != 0)
        rc = -errno;
    if (rc == 0)
        rc = uv_tcp_open(tcp, fd);
    if (rc != 0)
        close(fd);
    return rc;
}

/* ---- the worker's loop ------------------------------------------------------------------------
 */

/* Its pool for scope s: the one conversation's, or a sandbox's made on first use. */
static px_upmgr_t *px__pool_for(px_ctx_t *ctx, px_scope_t *s)
{
    px_worker_t *w = (px_worker_t *)ctx;
    if (s == ctx->conv)
        return w->up;
    for (size_t i = 0; i < w->npools; i++)
        if (w->pools[i].scope == s)
            return w->pools[i].up;
    if (w->npools == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 8;
        px__wpool_t *p = realloc(w->pools, cap * sizeof(*p));
        if (p == NULL)
            return NULL;
        w->pools = p;
        w->cap = cap;
    }
    px_upmgr_t *up = px_upmgr_new(&ctx->loop, ctx->cfg, w->resolver, ctx->tls_client);
    if (up == NULL)
        return NULL;
    px_upmgr_set_own(up, w->set->own, w->set->n_own, ctx->proxy_ip);
    w->pools[w->npools++] = (px__wpool_t){px_scope_ref(s), up};
    return up;
}

static void on_w_accept(uv_stream_t *server, int status)
{
    px__wlisten_t *l = px_container_of(server, px__wlisten_t, tcp);
    if (status < 0) {
        px_diag(PX_DIAG_WARN, "accept failed: %s", uv_strerror(status));
        return;
    }
    px_client_accept(&l->w->ctx, server, l->kind);
}

/* The logs this loop wrote to, handed to their writers once per turn (as the engine does). */
static int px__w_kick(px_worker_t *w, int force)
{
    int left = px_log_kick(w->ctx.log, force);
    if (w->ctx.scope_arg != NULL) /* --sandboxes */
        left |= px_sandboxes_kick_logs(w->ctx.scope_arg, force);
    return left;
}

static void on_w_log_timer(uv_timer_t *t)
{
    px_worker_t *w = t->data;
    if (px__w_kick(w, 1))
        uv_timer_start(&w->log_timer, on_w_log_timer, PX_LOG_DELAY_MS, 0);
}

static void on_w_log_kick(uv_check_t *h)
{
    px_worker_t *w = h->data;
    if (px__w_kick(w, 0) && !uv_is_active((uv_handle_t *)&w->log_timer))
        uv_timer_start(&w->log_timer, on_w_log_timer, PX_LOG_DELAY_MS, 0);
}

static void px__w_close_pools(px_worker_t *w, int gone_only)
{
    for (size_t i = 0; i < w->npools; i++)
        if (!gone_only || __atomic_load_n(&w->pools[i].scope->gone, __ATOMIC_ACQUIRE))
            px_upmgr_close_idle(w->pools[i].up);
}

static void px__w_stop(px_worker_t *w)
{
    if (w->ctx.stopping)
        return;
    w->ctx.stopping = 1;
    for (int i = 0; i < w->nls; i++)
        uv_close((uv_handle_t *)&w->ls[i].tcp, NULL);
    px_client_close_all(&w->ctx, "proxy shutting down");
    if (w->up != NULL)
        px_upmgr_close_idle(w->up);
    px__w_close_pools(w, 0);
    if (w->resolver != NULL)
        dns_resolver_close(w->resolver, NULL, NULL);
    w->resolver = NULL;
    uv_close((uv_handle_t *)&w->wake, NULL);
    uv_check_stop(&w->log_kick);
    uv_close((uv_handle_t *)&w->log_kick, NULL);
    uv_close((uv_handle_t *)&w->log_timer, NULL);
}

static void on_w_wake(uv_async_t *a)
{
    px_worker_t *w = a->data;
    if (__atomic_exchange_n(&w->want_changed, 0, __ATOMIC_ACQ_REL)) {
        px_client_sandboxes_changed(&w->ctx);
        px__w_close_pools(w, 1);
    }
    if (__atomic_load_n(&w->want_stop, __ATOMIC_ACQUIRE))
        px__w_stop(w);
}

static void *px__w_run(void *arg)
{
    px_worker_t *w = arg;
    px_metrics_thread_begin(&w->metrics);
    uv_run(&w->uv, UV_RUN_DEFAULT);
    px__w_stop(w); /* (the loop ended without being asked: nothing was left to run) */
    uv_run(&w->uv, UV_RUN_DEFAULT);
    px_loop_close(&w->ctx.loop);
    uv_run(&w->uv, UV_RUN_DEFAULT);
    if (uv_loop_close(&w->uv) != 0)
        px_diag(PX_DIAG_DEBUG, "worker %d: loop closed with handles open", w->ctx.worker);
    px_metrics_thread_end();
    return NULL;
}

/* ---- the engine's side ------------------------------------------------------------------------
 */

/* Sets up worker idx on its own loop (not running yet): its context, resolver, pool, listeners. */
static int px__w_new(px_workers_t *set, int idx, const px_worker_listen_t *ls, size_t n_ls,
                     const struct px_cidr *own, size_t n_own, px_worker_t **out)
{
    px_ctx_t *m = set->eng;
    px_worker_t *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return -1;
    *out = w;
    w->set = set;
    if (uv_loop_init(&w->uv) != 0 || px_loop_init(&w->ctx.loop, &w->uv) != 0) {
        px_diag(PX_DIAG_ERROR, "worker %d: out of memory", idx);
        abort(); /* at start-up, before anything is served */
    }
    w->ctx.cfg = m->cfg;
    w->ctx.log = m->log;
    w->ctx.ca = m->ca;
    w->ctx.tls_server = m->tls_server;
    w->ctx.tls_client = m->tls_client;
    w->ctx.proxy_ip = m->proxy_ip;
    w->ctx.conv = m->conv;
    w->ctx.worker = idx;
    w->ctx.scope_for = m->scope_for;
    w->ctx.scope_arg = m->scope_arg;
    w->ctx.pool_for = px__pool_for;
    w->ctx.pool_arg = w;
    w->ctx.conns_all = &set->conns_all;
    w->ctx.accepted_all = &set->accepted_all;
    w->ctx.rejected_of = m; /* one TLS REJECTED memory for every loop */
    uv_async_init(&w->uv, &w->wake, on_w_wake);
    w->wake.data = w;
    uv_check_init(&w->uv, &w->log_kick);
    w->log_kick.data = w;
    uv_check_start(&w->log_kick, on_w_log_kick);
    uv_unref((uv_handle_t *)&w->log_kick);
    uv_timer_init(&w->uv, &w->log_timer);
    w->log_timer.data = w;
    if (dns_resolver_create(&w->uv, m->cfg->upstream_dns, &w->resolver) != 0) {
        px_diag(PX_DIAG_ERROR, "worker %d: cannot use upstream DNS server %s", idx,
                m->cfg->upstream_dns);
        return -1;
    }
    w->up = px_upmgr_new(&w->ctx.loop, m->cfg, w->resolver, m->tls_client);
    if (w->up == NULL)
        return -1;
    px_upmgr_set_own(w->up, own, n_own, m->proxy_ip);
    for (size_t i = 0; i < n_ls && i < PX__WORKER_LISTENERS; i++) {
        px__wlisten_t *l = &w->ls[w->nls];
        l->w = w;
        l->kind = (px_listener_kind_t)ls[i].kind;
        uv_tcp_init(&w->uv, &l->tcp);
        int rc = px_worker_listen_reuseport(&l->tcp, (const struct sockaddr *)&ls[i].addr);
        if (rc == 0)
            rc = uv_listen((uv_stream_t *)&l->tcp, 4096, on_w_accept);
        if (rc != 0) {
            px_diag(PX_DIAG_ERROR, "worker %d: cannot listen: %s", idx, uv_strerror(rc));
            uv_close((uv_handle_t *)&l->tcp, NULL);
            return -1;
        }
        w->nls++;
    }
    return 0;
}

int px_workers_start(px_ctx_t *eng, int n, const px_worker_listen_t *ls, size_t n_ls,
                     const struct px_cidr *own, size_t n_own, px_workers_t **out)
{
    *out = NULL;
    if (n <= 1)
        return 0;
    px_workers_t *set = calloc(1, sizeof(*set));
    if (set == NULL || (set->w = calloc((size_t)n - 1, sizeof(*set->w))) == NULL) {
        free(set);
        return -1;
    }
    set->eng = eng;
    set->own = own;
    set->n_own = n_own;
    __atomic_store_n(&set->conns_all, eng->nclients, __ATOMIC_RELAXED);
    __atomic_store_n(&set->accepted_all, eng->next_id, __ATOMIC_RELAXED);
    eng->conns_all = &set->conns_all;
    eng->accepted_all = &set->accepted_all;
    *out = set;
    for (int i = 1; i < n; i++) {
        px_worker_t *w = NULL;
        int rc = px__w_new(set, i, ls, n_ls, own, n_own, &w);
        if (w != NULL)
            set->w[set->n++] = w;
        if (rc == 0 && pthread_create(&w->thread, NULL, px__w_run, w) == 0) {
            w->started = 1;
            continue;
        }
        px_diag(PX_DIAG_ERROR, "cannot start worker %d of %d", i, n);
        return -1;
    }
    return 0;
}

void px_workers_sandboxes_changed(px_workers_t *set)
{
    for (size_t i = 0; set != NULL && i < set->n; i++) {
        px_worker_t *w = set->w[i];
        if (!w->started || __atomic_load_n(&w->want_stop, __ATOMIC_ACQUIRE))
            continue; /* (a stopped worker's loop may be gone, and its wake-up with it) */
        __atomic_store_n(&w->want_changed, 1, __ATOMIC_RELEASE);
        uv_async_send(&w->wake);
    }
}

void px_workers_stop(px_workers_t *set)
{
    for (size_t i = 0; set != NULL && i < set->n; i++) {
        px_worker_t *w = set->w[i];
        /* once only: a worker told to stop closes its wake-up, and its loop may end before
         * the engine asks again (libuv aborts on a send to a closed loop) */
        if (__atomic_exchange_n(&w->want_stop, 1, __ATOMIC_ACQ_REL) == 0 && w->started)
            uv_async_send(&w->wake);
    }
}

void px_workers_free(px_workers_t *set)
{
    if (set == NULL)
        return;
    px_workers_stop(set);
    for (size_t i = 0; i < set->n; i++) {
        px_worker_t *w = set->w[i];
        if (w->started) {
            pthread_join(w->thread, NULL);
        } else { /* set up, never run: its handles close on this thread */
            px__w_stop(w);
            uv_run(&w->uv, UV_RUN_DEFAULT);
            px_loop_close(&w->ctx.loop);
            uv_run(&w->uv, UV_RUN_DEFAULT);
            uv_loop_close(&w->uv);
        }
        for (size_t k = 0; k < w->npools; k++) {
            px_upmgr_free(w->pools[k].up);
            px_scope_unref(w->pools[k].scope);
        }
        free(w->pools);
        px_upmgr_free(w->up);
        free(w);
    }
    set->eng->conns_all = NULL;
    set->eng->accepted_all = NULL;
    free(set->w);
    free(set);
}
