/* Internals shared by px_xchg.c (the exchange) and its parts: px_xchg_answer.c (the answers
 * airlock makes itself), px_xchg_ws.c, the pipeline (px_stage.c) and its stages
 * (px_stage_*.c). Nothing else includes this header. */
#ifndef PX_XCHG_INT_H
#define PX_XCHG_INT_H

#include <stdint.h>
#include <uv.h>

#include "addons/addon.h"
#include "addons/addon_leak.h"
#include "net/px_loop.h"
#include "proxy/px_stage.h"
#include "proxy/px_upstream.h"
#include "proxy/px_xchg.h"

typedef struct px_snapshot px_snapshot_t;

#define PX__METHOD_MAX 24

typedef enum { PX__RQ_BODY = 0, PX__RQ_DONE } px__rq_t;
typedef enum { PX__SINK_UP = 0, PX__SINK_BUFFER, PX__SINK_DISCARD } px__sink_t;
typedef enum { PX__RS_NONE = 0, PX__RS_WAIT, PX__RS_BODY, PX__RS_DONE } px__rs_t;

struct px_xchg {
    px_ctx_t *ctx;
    px_log_t *log;                          /* the sandbox's network log */
    px_upmgr_t *upmgr;                      /* the sandbox's upstream pool */
    struct addon_budget_table **budgets_at; /* the sandbox's budget counters (made on first use) */
    const px_down_ops_t *ops;
    void *down;
    px_msg_t *req; /* the request head (owned) */
    px_pre_t pre;
    addon_req_t *view;        /* what the addons see (owned) */
    px_snapshot_t *snap;      /* the configuration this request is decided under */
    px_snapshot_t *snap_from; /* borrowed until the head is decided: the one in force */
    char method[PX__METHOD_MAX];
    int tls;
    /* the request */
    px__rq_t rq;
    px__sink_t sink;
    int filter; /* an addon rewrites the body as it streams */
    /* the pipeline (px_stage.c): the stages passed (bit i: table entry i), the cursor */
    unsigned stage_done;
    int stage_cur;
    struct px__xgather { /* the filters stage (px_stage_filters.c) */
        int on;          /* the body is gathered whole before the head goes upstream */
        int filtered;    /* the body filters passed it */
        uint64_t cap;    /* ... up to this many bytes */
        char *body;      /* the body so far, then what the filters made of it */
        size_t len, bodycap;
        char *out; /* scratch, then the body the credential addon made */
        size_t outlen, outcap;
    } gath;
    uint64_t discarded;
    int expect;   /* 100-continue asked, no body byte seen yet */
    int sent_100; /* airlock answered 100 Continue itself */
    int upgrade;  /* a WebSocket upgrade was asked */
    int body_paused;
    struct px__xleak { /* the secret guard (px_stage_leak.c) */
        int on;        /* the body is scanned, its last bytes held back */
        addon_leak_state_t st;
        char *held; /* at most the longest pattern less one byte */
        size_t held_len;
    } leak;
    struct px__xbud *budget;  /* the egress budgets it counts for (px_stage_budget.c); NULL: none */
    struct px__xscrub *scrub; /* the response's scrubbing (px_stage_scrub.c); NULL: none */
    struct px__xgh {          /* the GitHub App stage (px_stage_ghapp.c) */
        struct px__ghmint *mint; /* the token request it waits for */
        px_xchg_t *next;         /* the next waiter */
        int outcome; /* 0: not asked yet; PX__GH_CACHED, PX__GH_REFRESHED, PX__GH_FAILED */
        int paused;  /* the stage paused the request body while it waits */
        px_defer_t resume;
        char why[160]; /* why the token request failed (no secret in it) */
    } gh;
    /* the response */
    px_upreq_t *up;
    px__rs_t rs;
    int status;
    unsigned interim;
    int up_paused;
    int up_ready;      /* the request is on a connection: its answer is awaited */
    int reuse;         /* the client connection may carry another request */
    int body_unwanted; /* the upstream answered early and closes: drop the rest of the body */
    /* timers: what each side must do by when (loop time, 0 = nothing awaited) */
    uv_timer_t timer;
    uint64_t client_by;
    uint64_t upstream_by;
    px_defer_t fin;
    int logged;
    int finished;
    uint64_t t0; /* uv_hrtime() when the exchange started (--metrics latencies) */
    /* what it relayed, for its audit event: body bytes each way, the upstream's address */
    uint64_t sent_up, sent_down;
    char up_addr[48];
    int aborted;
};

enum { PX__GH_CACHED = 1, PX__GH_REFRESHED = 2, PX__GH_FAILED = -1 };

/* px_xchg_answer.c */
/* Writes the exchange's one log line (verdict, status or, when status < 0, tail as the reason). */
void px__x_log(px_xchg_t *x, const char *verdict, int status, const char *tail);

/* px_xchg.c */
/* Ends the exchange: the client side hears it from the loop with reuse (px_down_ops_t). */
void px__x_finish(px_xchg_t *x, int reuse);
/* Where the request body goes after the stages' body hooks: upstream, the buffer, nowhere. */
void px__x_sink(px_xchg_t *x, const char *data, size_t len);
/* Arms the exchange's timers for who it waits for now (the client, the upstream). */
void px__x_waits(px_xchg_t *x);
/* Response bytes the stages passed, to the client (px_stage_resp_pass). */
void px__x_resp_sink(px_xchg_t *x, const char *data, size_t len);
/* A response head a stage held back goes to the client now. */
void px__x_resp_head(px_xchg_t *x, const px_resp_t *r);
/* Request body bytes to the upstream (counted for --metrics). */
void px__x_up_data(px_xchg_t *x, const char *data, size_t len);
/* The view handed to the addons (x->view, x->snap); 0 or PX_ENOMEM. */
int px__x_view(px_xchg_t *x);
/* Grows a buffer to hold need bytes; 0 or PX_ENOMEM. */
int px__x_grow(char **buf, size_t *cap, size_t need);
/* The upstream client's callbacks for the exchange's request. */
extern const px_up_cbs_t px__x_up_cbs;

/* px_stage_policy.c */
/* Runs addon a's head hook: PX_STAGE_CONTINUE, or PX_STAGE_REFUSE when the exchange answered. */
int px__x_addon_head(px_xchg_t *x, const addon_t *a);
/* Addon a's response-head hook, and its end of the request (the view made and decided). */
void px__x_addon_response_head(px_xchg_t *x, const addon_t *a, int status);
void px__x_addon_end(px_xchg_t *x, const addon_t *a);

/* px_stage_leak.c */
/* A request the pre-checks refuse (the Host disagrees with the SNI, the URL or the CONNECT
 * host; a CONNECT where no tunnel goes) is scanned as any head is, so that a value in it is
 * refused as a leak and never shown in that refusal's log line; 1 when it answered. */
int px__x_leak_pre(px_xchg_t *x);

/* px_stage_filters.c */
/* An addon failed on the body (err): 413, 403 or an abort; nothing half-signed goes on. */
void px__x_filter_failed(px_xchg_t *x, int err);
/* The gathered body went over its cap (len: the piece that crossed it): a stage refuses it its
 * own way (px_stage_body_over), else 413. */
void px__x_over_cap(px_xchg_t *x, size_t len);

/* px_stage_upstream.c */
/* The addon's output toward upstream (an addon_sink_t). */
int px__x_sink_up(void *data, const char *buf, size_t len);

/* px_stage_budget.c */
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
