/* A scope: what a client connection runs under, chosen once when it is accepted: one
 * conversation's configuration snapshot, network log, upstream pool, egress budget counters and
 * CA. Single-conversation mode has one scope, the context's (px_ctx.h); with `--sandboxes` each
 * sandbox is one (app/px_sandbox.h embeds it), chosen by the connection's source address. Every
 * connection holds exactly one scope, so nothing below the engine asks which mode it runs in.
 *
 * A connection holds a reference (px_scope_ref) for its life. A sandbox that left its directory
 * is `gone`; one whose sources changed moves `gen`, so a connection that saw another value looks
 * again whether its source is still in (px_scope_holds).
 *
 * With `--workers N` a scope's connections run on any of N loops: its reference count, its
 * connection count and its header bytes change atomically; its snapshot is swapped and read
 * under the scope lock (px_scope_set_snap, px_scope_snap), as are a sandbox's sources and the
 * list of sandboxes; its counters have their own lock (addons/addon_budget.h); its upstream
 * pool is the one loop's that made it (a worker keeps one of its own per scope). */
#ifndef PX_SCOPE_H
#define PX_SCOPE_H

#include <stddef.h>
#include <stdint.h>

#include "proxy/px_srcnet.h"

#define PX_SB_SOURCES_MAX 16 /* `source` lines per sandbox */
#define PX_SB_NAME_MAX 64    /* a sandbox's directory name (a scope's name) */

typedef struct px_snapshot px_snapshot_t;
typedef struct px_log px_log_t;
typedef struct px_upmgr px_upmgr_t;
typedef struct ca ca_t;
typedef struct px_scope px_scope_t;

struct px_scope {
    const char *name;    /* the sandbox's name; NULL for the one conversation */
    int refs;            /* its owner's, and every connection's in it */
    int gone;            /* left DIR: takes no new connection */
    unsigned gen;        /* moves when it goes or its sources change */
    px_snapshot_t *snap; /* its configuration now (a reference; SIGHUP swaps it) */
    px_log_t *log;       /* its network log */
    px_upmgr_t *up;      /* its own upstream pool: no connection is shared across scopes */
    struct addon_budget_table *budgets; /* its egress budget counters (NULL until used) */
    ca_t *ca;                           /* the CA that signs its leaves (px_scope_ca) */
    int own_ca_only; /* 1: only ca may sign (--ca-per-conversation in a sandbox) */
    px_srcnet_t src[PX_SB_SOURCES_MAX]; /* its sources (a sandbox's) */
    size_t nsrc;
    size_t max_conns; /* 0: only the process's limit */
    size_t conns;
    size_t h2_heads;                /* decoded HTTP/2 request header bytes its connections hold */
    void (*release)(px_scope_t *s); /* the last reference went (NULL: the owner frees it) */
};

/* 1 when s is not gone and one of its sources holds addr (IPv4 mapped, px_srcnet.h). */
int px_scope_holds(const px_scope_t *s, const uint8_t addr[16]);

/* The CA that signs the leaves of s's connections; fallback is the process's. NULL: none may. */
ca_t *px_scope_ca(const px_scope_t *s, ca_t *fallback);

px_scope_t *px_scope_ref(px_scope_t *s);

/* The scope lock (see above): readers of a sandbox's sources or of the sandboxes' list from
 * another loop than the one that reloads them, and the reload itself. */
void px_scope_rdlock(void);
void px_scope_wrlock(void);
void px_scope_unlock(void);

/* s's snapshot now, with a reference the caller lets go of (NULL when s has none). */
px_snapshot_t *px_scope_snap(px_scope_t *s);

/* Puts n (a reference, taken) in force for s; returns the previous one for the caller to let
 * go of once nothing it started still reads it. */
px_snapshot_t *px_scope_set_snap(px_scope_t *s, px_snapshot_t *n);
void px_scope_unref(px_scope_t *s);

#endif
