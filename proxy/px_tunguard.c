#include "proxy/px_tunguard.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/px_err.h"
#include "base/px_grow.h"
#include "base/px_sbuf.h"
#include "base/px_wsframe.h"
#include "proxy/px_answer.h"
#include "proxy/px_wsscrub.h"

#define PX__TG_SCRATCH (16 * 1024) /* payload unmasked for the scan, a piece at a time */

/* A run of the open message's payload that may still begin a value: where it sits in the raw
 * stream, and where in the message. */
typedef struct px__tg_seg {
    uint64_t raw;
    uint64_t pos;
    uint64_t len;
} px__tg_seg_t;

typedef struct px_tunguard {
    px_log_t *log;
    char line[PX_TUNGUARD_LINE_MAX]; /* "GET http://h/ws -> 101", "CONNECT h:443 -> 200 tunnel" */
    audit_event_t ev;                /* line split: the event's method, URL, status and kind */
    const char *what;                /* "the WebSocket", "the tunnel" */
    px_snapshot_t *snap;             /* a reference: the budgets' limits and the patterns */
    addon_budget_req_t *bud;         /* NULL: no byte budget */
    uint64_t moved[2];               /* bytes relayed from side 0 (sent) and side 1 (received) */
    int cut;
    /* the secret guard on the client's frames (side 0); leak NULL: not read */
    const addon_leak_t *leak;
    px_wsframe_t fp;
    addon_leak_state_t msg; /* the open data message's scan */
    addon_leak_state_t ctl; /* the control frame's scan */
    uint64_t msg_pos;       /* payload bytes of the open message scanned */
    uint64_t in, out;       /* raw bytes read from the client, handed on */
    uint64_t frame_from;    /* raw offset of the frame being read */
    int in_ctl;             /* a control frame is being read: held until its end */
    px__tg_seg_t *seg;      /* the message's bytes that may begin a value (in order) */
    size_t nseg, segcap;
    px_buf_t held; /* raw [out, in): what cannot go yet */
    char *scratch;
    /* the upstream's frames, followed only to know where one ends (a close frame can go then) */
    px_wsframe_t down;
    int down_lost; /* they broke the protocol: no longer followed */
    /* the upstream's frames, scrubbed (NULL: relayed as they are); it writes whole frames only */
    px_wsscrub_t *ws;
    px_tunnel_t *ws_t; /* during a feed: where its frames go */
} px_tunguard_t;

static void px__tg_free(void *h)
{
    px_tunguard_t *g = h;
    px_wsscrub_free(g->ws); /* before the snapshot: it holds the scrubber's matcher */
    addon_budget_end(g->bud);
    px_snapshot_unref(g->snap);
    free(g->seg);
    px_buf_free(&g->held);
    free(g->scratch);
    free(g);
}

/* ---- budgets ------------------------------------------------------------------------------- */

/* Hands data read by side on, counted against the budgets; a piece crossing one goes up to it,
 * then the tunnel is cut (the side receiving it closes once that is out). */
static void px__tg_pass(px_tunguard_t *g, px_tunnel_t *t, int side, const char *data, size_t len)
{
    if (g->cut || len == 0)
        return;
    addon_budget_kind_t kind = side == 0 ? ADDON_BUDGET_SENT : ADDON_BUDGET_RECEIVED;
    uint64_t fit = 0;
    addon_budget_over_t o;
    if (!addon_budget_count(g->bud, kind, len, &fit, &o)) {
        g->moved[side] += len;
        px_tunnel_pass(t, side, data, len);
        return;
    }
    g->moved[side] += fit;
    px_tunnel_pass(t, side, data, (size_t)fit);
    g->cut = 1;
    char desc[ADDON_BUDGET_DESC_MAX];
    addon_budget_describe(&o, desc, sizeof(desc));
    audit_event_t ev = g->ev;
    ev.verdict = AUDIT_EV_BLOCKED;
    px_log_eventf(g->log, &ev, "budget: %s; %s was cut after %llu bytes %s", desc, g->what,
                  (unsigned long long)g->moved[side], side == 0 ? "sent" : "received");
    px_tunnel_cut(t, !side);
}

size_t px_tunguard_budget_json(const addon_budget_over_t *o, uint64_t declared, char *json,
                               size_t cap)
{
    const addon_budget_t *b = o->b;
    char where[ADDON_BUDGET_DESC_MAX], lim[48], msg[1024];
    snprintf(where, sizeof(where), "%s", b->pattern == NULL ? "any host" : b->host);
    addon_budget_limit_text(b, lim, sizeof(lim));
    static const char *const what[] = {
        [ADDON_BUDGET_REQUESTS] = "requests to",
        [ADDON_BUDGET_SENT] = "bytes of request bodies sent to",
        [ADDON_BUDGET_RECEIVED] = "bytes of response bodies received from",
    };
    if (b->kind == ADDON_BUDGET_RATE) {
        snprintf(msg, sizeof(msg),
                 "Too many requests to %s: the egress rate budget is %s (set at %s). Retry in "
                 "%lld s.",
                 where, lim, b->src, (long long)((o->resets_in_ms + 999) / 1000));
    } else {
        int n = snprintf(msg, sizeof(msg),
                         "This conversation's egress budget of %s %s %s (set at %s) is used up "
                         "(%llu so far)",
                         lim, what[b->kind], where, b->src, (unsigned long long)o->used);
        if (n > 0 && (size_t)n < sizeof(msg) && declared > 1)
            n += snprintf(msg + n, sizeof(msg) - (size_t)n,
                          " or would be by this body of %llu bytes", (unsigned long long)declared);
        if (n > 0 && (size_t)n < sizeof(msg))
            snprintf(msg + n, sizeof(msg) - (size_t)n,
                     ". It resets only when airlock restarts: ask the user to raise the budget "
                     "in the network allowlist if more is needed.");
    }
    px_sbuf_t s;
    px_sbuf_init(&s, json, cap);
    px_sbuf_adds(&s, "{\"error\": \"egress_budget_exceeded\", \"message\": ");
    px_sbuf_json_str(&s, msg, strlen(msg));
    px_sbuf_printf(&s,
                   ", \"budget\": {\"kind\": \"%s\", \"host\": ", addon_budget_kind_name(b->kind));
    px_sbuf_json_str(&s, b->host, strlen(b->host));
    px_sbuf_printf(&s, ", \"limit\": %llu", (unsigned long long)b->limit);
    if (b->kind == ADDON_BUDGET_RATE)
        px_sbuf_printf(&s, ", \"per_seconds\": %llu", (unsigned long long)(b->per_ms / 1000));
    else
        px_sbuf_printf(&s, ", \"used\": %llu", (unsigned long long)o->used);
    px_sbuf_adds(&s, ", \"set_at\": ");
    px_sbuf_json_str(&s, b->src, strlen(b->src));
    if (o->resets_in_ms >= 0)
        px_sbuf_printf(&s, "}, \"resets_in\": %lld}", (long long)((o->resets_in_ms + 999) / 1000));
    else
        px_sbuf_adds(&s, "}, \"resets_in\": null}");
    return s.len;
}

/* ---- the secret guard on the client's WebSocket frames --------------------------------------- */

/* Follows the upstream's frames relayed to the client, to know when one ends. */
static void px__tg_follow(px_tunguard_t *g, const char *data, size_t len)
{
    size_t at = 0;
    while (!g->down_lost) {
        size_t used, rlen;
        const char *run;
        int ev = px_wsframe_next(&g->down, data + at, len - at, &used, &run, &rlen);
        at += used;
        if (ev < 0)
            g->down_lost = 1;
        if (ev <= 0)
            return;
    }
}

/* Stops the WebSocket before what it read goes on: nothing more is relayed either way. When
 * the upstream's frames to the client are between two frames, the client gets a close frame
 * (1008, policy violation) first. */
static void px__tg_refuse(px_tunguard_t *g, px_tunnel_t *t, audit_event_verdict_t verdict,
                          const char *why)
{
    static const char close1008[] = "\x88\x14\x03\xf0"
                                    "blocked by airlock";
    g->cut = 1;
    /* the scrubber hands on whole frames only: between two feeds, the client is between frames */
    int boundary =
        g->ws != NULL || (!g->down_lost && g->down.hlen == 0 && g->down.off == g->down.len);
    audit_event_t ev = g->ev;
    ev.verdict = verdict;
    px_log_eventf(g->log, &ev, "%s; the WebSocket was closed%s", why, boundary ? " with 1008" : "");
    if (boundary) {
        px_tunnel_pass(t, 1, close1008, sizeof(close1008) - 1);
        px_tunnel_cut(t, 0);
        return;
    }
    px_tunnel_cut(t, -1);
}

static void px__tg_leak(px_tunguard_t *g, px_tunnel_t *t, const addon_leak_match_t *mt)
{
    char why[300];
    const char *in = g->in_ctl ? (g->fp.opcode == PX_WSFRAME_PING   ? "a WebSocket ping"
                                  : g->fp.opcode == PX_WSFRAME_PONG ? "a WebSocket pong"
                                                                    : "a WebSocket close frame")
                               : "a WebSocket message";
    snprintf(why, sizeof(why), "leak: %s %s, %s, in %s", addon_leak_kind_name(mt->kind), mt->name,
             addon_leak_enc_name(mt->enc), in);
    px__tg_refuse(g, t, AUDIT_EV_BLOCKED, why);
}

/* The message's bytes that may begin a value after a run [raw, raw + n) at message offset pos
 * was scanned: the last `pending` bytes of the message. 0, or -1 when more runs than the
 * longest pattern would be needed (never, by the scan's bound). */
static int px__tg_pending(px_tunguard_t *g, uint64_t raw, uint64_t pos, uint64_t n, size_t pending)
{
    if (pending == 0) {
        g->nseg = 0;
        return 0;
    }
    if (pending <= n) {
        g->seg[0] = (px__tg_seg_t){raw + n - pending, pos + n - pending, pending};
        g->nseg = 1;
        return 0;
    }
    if (g->nseg == g->segcap)
        return -1;
    g->seg[g->nseg++] = (px__tg_seg_t){raw, pos, n};
    uint64_t from = pos + n - pending; /* the first byte that may begin a value */
    size_t drop = 0;
    while (drop < g->nseg && g->seg[drop].pos + g->seg[drop].len <= from)
        drop++;
    if (drop > 0) {
        memmove(g->seg, g->seg + drop, (g->nseg - drop) * sizeof(g->seg[0]));
        g->nseg -= drop;
    }
    if (g->seg[0].pos < from) {
        uint64_t d = from - g->seg[0].pos;
        g->seg[0].raw += d;
        g->seg[0].pos += d;
        g->seg[0].len -= d;
    }
    return 0;
}

/* A run of payload (masked, at raw offset raw) through the scan. 1 when it ended the tunnel. */
static int px__tg_scan(px_tunguard_t *g, px_tunnel_t *t, const char *run, size_t len, uint64_t raw)
{
    uint64_t off = g->fp.off - len;
    for (size_t k = 0; k < len;) {
        size_t n = len - k < PX__TG_SCRATCH ? len - k : PX__TG_SCRATCH;
        px_wsframe_unmask(g->fp.key, off + k, run + k, g->scratch, n);
        addon_leak_match_t mt;
        addon_leak_state_t *st = g->in_ctl ? &g->ctl : &g->msg;
        if (addon_leak_feed(g->leak, st, g->scratch, n, &mt)) {
            px__tg_leak(g, t, &mt);
            return 1;
        }
        if (!g->in_ctl) {
            if (px__tg_pending(g, raw + k, g->msg_pos, n, addon_leak_pending(g->leak, st)) != 0) {
                px__tg_refuse(g, t, AUDIT_EV_BLOCKED,
                              "websocket: too many frames held behind a "
                              "possible secret");
                return 1;
            }
            g->msg_pos += n;
        }
        k += n;
    }
    return 0;
}

/* Reads the frames of a piece the client sent (raw offsets from base). 1 when it ended the
 * tunnel. */
static int px__tg_frames(px_tunguard_t *g, px_tunnel_t *t, const char *data, size_t len,
                         uint64_t base)
{
    size_t at = 0;
    for (;;) {
        size_t used, rlen;
        const char *run;
        int ev = px_wsframe_next(&g->fp, data + at, len - at, &used, &run, &rlen);
        uint64_t raw = base + at;
        at += used;
        if (ev < 0) {
            char why[200];
            snprintf(why, sizeof(why), "websocket: %s", g->fp.why);
            px__tg_refuse(g, t, AUDIT_EV_BLOCKED, why);
            return 1;
        }
        if (ev == PX_WSFRAME_MORE)
            return 0;
        if (ev == PX_WSFRAME_HEAD) {
            g->in_ctl = px_wsframe_is_control(g->fp.opcode);
            if (g->in_ctl) {
                addon_leak_state_init(&g->ctl);
            } else if (g->fp.opcode != PX_WSFRAME_CONT) {
                addon_leak_state_init(&g->msg); /* one scan per message */
                g->msg_pos = 0;
                g->nseg = 0;
            }
        } else if (ev == PX_WSFRAME_DATA) {
            if (px__tg_scan(g, t, run, rlen, raw))
                return 1;
        } else { /* END */
            if (!g->in_ctl && g->fp.message_end)
                g->nseg = 0; /* the message is whole: a value cannot go on in it */
            g->in_ctl = 0;
            g->frame_from = base + at;
        }
    }
}

/* What the client sent: read, scanned, then handed on up to the first byte that may begin a
 * value (or the control frame still being read); the rest is held. */
static void px__tg_client(px_tunguard_t *g, px_tunnel_t *t, const char *data, size_t len)
{
    uint64_t base = g->in;
    if (px__tg_frames(g, t, data, len, base))
        return;
    g->in = base + len;
    uint64_t safe = g->in;
    if (g->nseg > 0 && g->seg[0].raw < safe)
        safe = g->seg[0].raw;
    if (g->in_ctl && g->frame_from < safe)
        safe = g->frame_from;
    if (safe < g->out)
        safe = g->out; /* a control frame whose header began in a piece already handed on */
    /* [out, base) is in held, [base, in) in data */
    size_t from_held = (size_t)((safe < base ? safe : base) - g->out);
    size_t from_data = safe > base ? (size_t)(safe - base) : 0;
    size_t keep = (size_t)(g->in - safe);
    size_t cap = addon_leak_max_pattern_len(g->leak) + PX_TUNGUARD_HOLD_EXTRA;
    if (keep > cap) {
        px__tg_refuse(g, t, AUDIT_EV_BLOCKED,
                      "websocket: too many bytes of frames held behind a "
                      "possible secret");
        return;
    }
    if (from_held > 0) {
        px__tg_pass(g, t, 0, g->held.data, from_held);
        if (g->cut)
            return;
        memmove(g->held.data, g->held.data + from_held, g->held.len - from_held);
        g->held.len -= from_held;
    }
    px__tg_pass(g, t, 0, data, from_data);
    if (g->cut)
        return;
    g->out = safe;
    size_t add = len - from_data;
    if (add > 0 && px_buf_append(&g->held, data + from_data, add) != 0)
        px__tg_refuse(g, t, AUDIT_EV_ERROR, "out of memory");
}

/* ---- the upstream's WebSocket frames, scrubbed -------------------------------------------- */

static int px__tg_ws_emit(void *arg, const char *data, size_t len)
{
    px_tunguard_t *g = arg;
    px__tg_pass(g, g->ws_t, 1, data, len);
    return g->cut ? PX_ESTATE : 0; /* the budget cut the tunnel */
}

/* What the upstream sent: its frames, with every real value replaced, go on whole; one line
 * names the entries replaced in this piece. A frame that cannot be read (compressed, masked,
 * broken) closes the WebSocket: nothing unscrubbed reaches the agent. */
static void px__tg_upstream(px_tunguard_t *g, px_tunnel_t *t, const char *data, size_t len)
{
    g->ws_t = t;
    int rc = px_wsscrub_feed(g->ws, data, len, px__tg_ws_emit, g);
    g->ws_t = NULL;
    if (g->cut)
        return;
    if (rc != 0) {
        char why[200];
        snprintf(why, sizeof(why), "websocket: the upstream sent %s",
                 rc == PX_EPARSE ? px_wsscrub_why(g->ws) : "what could not be scrubbed");
        px__tg_refuse(g, t, rc == PX_EPARSE ? AUDIT_EV_BLOCKED : AUDIT_EV_ERROR, why);
        return;
    }
    uint64_t total;
    const uint64_t *counts = px_wsscrub_counts(g->ws, &total);
    if (total == 0)
        return;
    char text[512];
    size_t n = addon_scrub_describe(g->snap->scrub, counts, text, sizeof(text));
    px_wsscrub_take_counts(g->ws);
    audit_event_t ev = g->ev;
    ev.verdict = AUDIT_EV_ALLOWED;
    px_log_eventf(g->log, &ev, "websocket: from the upstream %.*s",
                  (int)(n < sizeof(text) ? n : sizeof(text) - 1), text);
}

static void px__tg_data(void *h, px_tunnel_t *t, int side, const char *data, size_t len)
{
    px_tunguard_t *g = h;
    if (g->cut)
        return;
    if (side == 0 && g->leak != NULL) {
        px__tg_client(g, t, data, len);
        return;
    }
    if (side == 1 && g->ws != NULL) {
        px__tg_upstream(g, t, data, len);
        return;
    }
    if (g->leak != NULL)
        px__tg_follow(g, data, len); /* counted first: the budget may cut what it relays */
    px__tg_pass(g, t, side, data, len);
}

/* ---- making one ---------------------------------------------------------------------------- */

/* Splits g->line ("METHOD URL -> STATUS[ tunnel]", made by the exchange or below) into g->ev,
 * whose views point into it; the lines of the guard add the verdict and their tail. */
static void px__tg_split(px_tunguard_t *g)
{
    const char *l = g->line;
    const char *sp = strchr(l, ' ');
    const char *arrow = NULL;
    for (const char *p = l; (p = strstr(p, " -> ")) != NULL; p++)
        arrow = p; /* the last one: a URL may hold " -> " (escaped only when logged) */
    int connect = strncmp(l, "CONNECT ", 8) == 0;
    memset(&g->ev, 0, sizeof(g->ev));
    g->ev.kind = connect ? AUDIT_EV_CONNECT : AUDIT_EV_REQUEST;
    g->ev.status = -1;
    if (sp == NULL || arrow == NULL || arrow < sp) {
        g->ev.reason = audit_s(l); /* not expected; still logged whole */
        return;
    }
    g->ev.method.base = l;
    g->ev.method.len = (size_t)(sp - l);
    g->ev.url.base = sp + 1;
    g->ev.url.len = (size_t)(arrow - sp - 1);
    g->ev.status = atoi(arrow + 4);
    if (strstr(arrow + 4, " tunnel") != NULL)
        g->ev.kind = AUDIT_EV_TUNNEL;
}

static px_tunguard_t *px__tg_new(px_log_t *log, const char *line, const char *what,
                                 px_snapshot_t *snap, addon_budget_req_t *bud,
                                 const addon_leak_t *leak)
{
    px_tunguard_t *g = calloc(1, sizeof(*g));
    if (g == NULL)
        return NULL;
    /* bounded by the hold check before each append (the longest secret and a frame head) */
    px_buf_init(&g->held, 256, SIZE_MAX);
    g->log = log;
    snprintf(g->line, sizeof(g->line), "%s", line);
    px__tg_split(g);
    g->what = what;
    g->bud = bud;
    g->leak = leak;
    if (leak != NULL) {
        px_wsframe_init(&g->fp, 1);
        px_wsframe_init(&g->down, 0);
        addon_leak_state_init(&g->msg);
        g->segcap = addon_leak_max_pattern_len(leak) + 1;
        g->seg = malloc(g->segcap * sizeof(g->seg[0]));
        g->scratch = malloc(PX__TG_SCRATCH);
        if (g->seg == NULL || g->scratch == NULL) {
            g->bud = NULL;
            px__tg_free(g);
            return NULL;
        }
    }
    g->snap = px_snapshot_ref(snap);
    return g;
}

int px_tunguard_ws(px_tunnel_t *t, px_log_t *log, const char *line, px_snapshot_t *snap,
                   addon_budget_req_t *bud, const addon_leak_t *leak)
{
    const addon_scrub_t *scrub = snap != NULL ? snap->scrub : NULL;
    if (bud == NULL && leak == NULL && scrub == NULL)
        return 0;
    px_tunguard_t *g = px__tg_new(log, line, "the WebSocket", snap, bud, leak);
    if (g != NULL && scrub != NULL && (g->ws = px_wsscrub_new(scrub)) == NULL) {
        g->bud = NULL;
        px__tg_free(g);
        g = NULL;
    }
    if (g == NULL) {
        addon_budget_end(bud);
        return PX_ENOMEM;
    }
    px_tunnel_hook_t hook = {.data = px__tg_data, .free = px__tg_free, .h = g};
    px_tunnel_set_hook(t, &hook);
    return 0;
}

int px_tunguard_connect(px_log_t *log, addon_budget_table_t **tab, px_snapshot_t *snap,
                        const char *url, addon_str_t host, uint64_t now_ms, px_tunnel_t **out,
                        char *ans, size_t cap, size_t *anslen)
{
    *out = NULL;
    *anslen = 0;
    size_t n;
    addon_policy_budgets(snap->cfg.policy, &n);
    if (n == 0)
        return 0;
    addon_budget_table_t *table = addon_budget_table_at(tab);
    if (table == NULL)
        return PX_ENOMEM;
    addon_budget_req_t *bud = NULL;
    addon_budget_over_t o;
    int rc = addon_budget_begin(table, snap->cfg.policy, host, 1, now_ms, &bud, &o);
    if (rc < 0)
        return rc;
    if (rc == 1) {
        char desc[ADDON_BUDGET_DESC_MAX], json[2048];
        addon_budget_describe(&o, desc, sizeof(desc));
        audit_event_t ev =
            audit_event_access(AUDIT_EV_CONNECT, AUDIT_EV_BLOCKED, "CONNECT", url, 429);
        px_log_eventf(log, &ev, "budget: %s", desc);
        size_t jl = px_tunguard_budget_json(&o, 0, json, sizeof(json));
        *anslen = px_answer_build(ans, cap, 429, json, jl, 1);
        return 1;
    }
    if (bud == NULL)
        return 0;
    char line[PX_TUNGUARD_LINE_MAX];
    snprintf(line, sizeof(line), "CONNECT %s -> 200 tunnel", url);
    px_tunnel_t *t = px_tunnel_new();
    px_tunguard_t *g = t != NULL ? px__tg_new(log, line, "the tunnel", snap, bud, NULL) : NULL;
    if (g == NULL) {
        free(t);
        addon_budget_end(bud);
        return PX_ENOMEM;
    }
    px_tunnel_hook_t hook = {.data = px__tg_data, .free = px__tg_free, .h = g, .ahead = 1};
    px_tunnel_set_hook(t, &hook);
    *out = t;
    return 0;
}
