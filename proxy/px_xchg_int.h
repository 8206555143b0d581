/* Internals shared by px_xchg.c (the exchange) and its parts: px_xchg_answer.c (the answers
 * airlock makes itself), px_xchg_filter.c, px_xchg_leak.c, px_xchg_budget.c and px_ghapp.c (the
 * GitHub App stage). Nothing else includes this header. */
#ifndef PX_XCHG_INT_H
#define PX_XCHG_INT_H

#include <stdint.h>
#include <uv.h>

#include "addons/addon.h"
#include "addons/addon_leak.h"
#include "proxy/px_loop.h"
#include "proxy/px_upstream.h"
#include "proxy/px_xchg.h"

typedef struct px_snapshot px_snapshot_t;

#define PX__METHOD_MAX 24

typedef enum { PX__RQ_BODY = 0, PX__RQ_DONE } px__rq_t;
typedef enum { PX__SINK_UP = 0, PX__SINK_BUFFER, PX__SINK_DISCARD } px__sink_t;
typedef enum { PX__RS_NONE = 0, PX__RS_WAIT, PX__RS_BODY, PX__RS_DONE } px__rs_t;

struct px_xchg {
    px_engine_t *eng;
    px_log_t *log;            /* the sandbox's network log */
    px_upmgr_t *upmgr;        /* the sandbox's upstream pool */
    struct addon_budget_table **budgets_at; /* the sandbox's budget counters (made on first use) */
    const px_down_ops_t *ops;
    void *down;
    px_msg_t *req;            /* the request head (owned) */
    px_pre_t pre;
    addon_req_t *view;        /* what the addons see (owned) */
    px_snapshot_t *snap;      /* the configuration this request is decided under */
    px_snapshot_t *snap_from; /* borrowed until the head is decided: the one in force */
    char method[PX__METHOD_MAX];
    int tls;
    /* the request */
    px__rq_t rq;
    px__sink_t sink;
    int filter;               /* an addon rewrites the body as it streams */
    int gather;               /* the body is gathered whole before the head goes upstream */
    int filtered;             /* the body filters passed it */
    const addon_t *const *resume; /* the credential stage, waiting for the filters */
    uint64_t gather_cap;      /* ... up to this many bytes */
    char *bodybuf;            /* ADDON_BODY_BUFFER: the body so far, then what the addon made */
    size_t bodylen, bodycap;
    char *outbody;
    size_t outlen, outcap;
    uint64_t discarded;
    int expect;               /* 100-continue asked, no body byte seen yet */
    int sent_100;             /* airlock answered 100 Continue itself */
    int upgrade;              /* a WebSocket upgrade was asked */
    int body_paused;
    /* the secret guard (px_xchg_leak.c): the body is scanned, its last bytes held back */
    int leak_on;
    addon_leak_state_t leak_st;
    char *held;               /* at most the longest pattern less one byte */
    size_t held_len;
    struct px__xbud *budget;  /* the egress budgets it counts for (px_xchg_budget.c); NULL: none */
    /* the GitHub App stage (px_ghapp.c): the token request it waits for, the next waiter */
    struct px__ghmint *gh_mint;
    px_xchg_t *gh_next;
    int gh_outcome;           /* 0: not asked yet; PX__GH_CACHED, PX__GH_REFRESHED, PX__GH_FAILED */
    int gh_paused;            /* the stage paused the request body while it waits */
    px_defer_t gh_resume;
    char gh_why[160];         /* why the token request failed (no secret in it) */
    /* the response */
    px_upreq_t *up;
    px__rs_t rs;
    int status;
    unsigned interim;
    int up_paused;
    int up_ready;             /* the request is on a connection: its answer is awaited */
    int reuse;                /* the client connection may carry another request */
    int body_unwanted;        /* the upstream answered early and closes: drop the rest of the body */
    /* timers: what each side must do by when (loop time, 0 = nothing awaited) */
    uv_timer_t timer;
    uint64_t client_by;
    uint64_t upstream_by;
    px_defer_t fin;
    int logged;
    int finished;
    int aborted;
};


enum { PX__GH_CACHED = 1, PX__GH_REFRESHED = 2, PX__GH_FAILED = -1 };

/* px_xchg_answer.c */
/* Writes the exchange's one log line (verdict, status or, when status < 0, tail as the reason). */
void px__x_log(px_xchg_t *x, const char *verdict, int status, const char *tail);

/* px_xchg.c */
/* The head hooks go on from x->resume after a wait (px_ghapp.c), then the rest of the head's
 * work (the budgets and the upstream request, or the gathered body's). */
void px__x_continue(px_xchg_t *x);
/* Ends the exchange: the client side hears it from the loop with reuse (px_down_ops_t). */
void px__x_finish(px_xchg_t *x, int reuse);

/* Hands a piece of the request body on (upstream, the buffer, or nowhere). */
void px__x_body_out(px_xchg_t *x, const char *data, size_t len);

/* px_xchg_leak.c */
/* Scans the request target and fields for a secret or a canary; 1 when it answered (refused). */
int px__x_leak_head(px_xchg_t *x);
/* A request the pre-checks refuse (the Host disagrees with the SNI, the URL or the CONNECT
 * host; a CONNECT where no tunnel goes) is scanned as any head is, so that a value in it is
 * refused as a leak and never shown in that refusal's log line; 1 when it answered. */
int px__x_leak_pre(px_xchg_t *x);
/* A piece of the body through the guard: scanned, then all but the held tail handed on. */
void px__x_leak_body(px_xchg_t *x, const char *data, size_t len);
/* The request ended with trailer fields t (borrowed; NULL: none): they are scanned as the head's
 * fields are (a match aborts the upstream request, nothing of t or the held tail leaves), then
 * the held tail goes on. 1 when the exchange ended (refused, or failed). */
int px__x_leak_end(px_xchg_t *x, const px_fields_t *t);

/* px_xchg_filter.c */
/* Runs the body filters on the gathered body (over: it went past gather_cap, and only its
 * length is known). ADDON_NEXT (the body, possibly rewritten, is in bodybuf) or ADDON_ANSWER
 * with ans filled. Uses outbody as scratch. */
int px__x_filters(px_xchg_t *x, int over, addon_answer_t *ans);

/* An addon failed on the body (err): 413, 403 or an abort; nothing half-signed goes on. */
void px__x_filter_failed(px_xchg_t *x, int err);
/* The gathered body went over its cap (len: the piece that crossed it): a body filter
 * refuses it its own way, else 413. */
void px__x_over_cap(px_xchg_t *x, size_t len);

/* px_ghapp.c */
/* Before addon a: when a is the GitHub App stage's place (after AWS, before masking) and the
 * request carries an in-scope github-app surrogate, the installation token goes in (0), the
 * exchange answered (1: a refresh failure, plain http), or it waits for the token (2; it
 * resumes with px__x_continue). Otherwise foreign credentials are stripped as the entry says
 * and 0. */
int px__x_ghapp_stage(px_xchg_t *x, const addon_t *const *a);
/* The body gathered for a GraphQL request carrying a github-app surrogate went over the
 * GraphQL cap: 1 and ans filled (403 graphql_repo_scope_blocked), else 0. */
int px__x_ghapp_over_cap(px_xchg_t *x, addon_answer_t *ans);
/* The exchange is released: it stops waiting for a token. */
void px__x_ghapp_end(px_xchg_t *x);

/* px_xchg_budget.c */
/* The request head was allowed: admits it under the egress budgets; 1 when it answered 429. */
int px__x_budget_head(px_xchg_t *x);
/* A piece of request body going upstream: 1 when it crossed a sent-bytes budget (what fit went
 * on, the exchange was stopped); 0: hand it on. */
int px__x_budget_sent(px_xchg_t *x, const char *data, size_t len);
/* A piece of response body: 1 when it crossed a received-bytes budget (what fit was relayed,
 * the response cut); 0: relay it. */
int px__x_budget_received(px_xchg_t *x, const char *data, size_t len);
/* The exchange is released: its counters are let go. */
void px__x_budget_end(px_xchg_t *x);
/* Takes the request's byte-budget counters away from it (a tunnel goes on counting on them);
 * NULL when it has none. */
struct addon_budget_req *px__x_budget_take(px_xchg_t *x);

/* px_xchg_ws.c */
/* A WebSocket upgrade while the secret guard is on: Sec-WebSocket-Extensions stays here. */
void px__x_ws_prepare(px_xchg_t *x);
/* The 101 came: t gets the tunnel's guard (budgets, the client's frames scanned). 0 or
 * PX_ENOMEM. */
int px__x_ws_guard(px_xchg_t *x, px_tunnel_t *t);

/* px_xchg_answer.c */
void px__x_answer(px_xchg_t *x, int status, const char *json, size_t len, int close);
void px__x_answer_error(px_xchg_t *x, int status, const char *error, const char *message,
                        int close);
void px__x_addon_answer(px_xchg_t *x, const addon_answer_t *ans);
void px__x_refuse(px_xchg_t *x);
void px__x_up_failed(px_xchg_t *x, const char *why);

#endif
