/* The decision webhook (px_decide.h). One call per new question, each with its own timer (the
 * call's time-out); a call whose question is answered elsewhere (the control socket, the hold's
 * deadline, its requests gone) is aborted and counts neither way. */
#include "proxy/px_decide.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/px_err.h"
#include "proxy/px_drafts.h"
#include "proxy/px_hold.h"
#include "proxy/px_log.h"
#include "proxy/px_metrics.h"
#include "proxy/px_upstream.h"

typedef enum { PX__BR_CLOSED = 0, PX__BR_OPEN, PX__BR_TRIAL } px__breaker_t;

typedef struct px__dcall px__dcall_t;
struct px__dcall {
    px__dcall_t *next;
    px_decide_t *d;
    uint64_t id;
    px_upreq_t *up;
    uv_timer_t timer;
    int status;
    int over;
    int trial;       /* the breaker's trial call */
    int at_deadline; /* its time-out is the hold's deadline */
    size_t len;
    char resp[PX_DECIDE_RESP_MAX];
};

struct px_decide {
    px_ctx_t *ctx;
    px_upmgr_t *up;
    char url[PX_DECIDE_URL_MAX];
    char host[PX_HOST_MAX + 1];
    char path[PX_DECIDE_URL_MAX];
    char host_header[PX_HOST_MAX + 16];
    unsigned port;
    int tls;
    px__dcall_t *calls;
    size_t ncalls;
    size_t handles; /* timers not closed yet */
    int stopped;
    px__breaker_t breaker;
    unsigned fails; /* failures in a row */
    uint64_t open_until;
};

static uint64_t px__test_ms(const char *name, uint64_t dflt)
{
    /* tests only: shorter time-outs and cool-downs */
    const char *t = getenv(name);
    return t != NULL && atoi(t) > 0 ? (uint64_t)atoi(t) : dflt;
}

int px_decide_parse_url(const char *url, char *host, size_t hostcap, unsigned *port, int *tls,
                        char *path, size_t pathcap, const char **why)
{
    const char *p;
    if (strncmp(url, "http://", 7) == 0) {
        *tls = 0;
        *port = 80;
        p = url + 7;
    } else if (strncmp(url, "https://", 8) == 0) {
        *tls = 1;
        *port = 443;
        p = url + 8;
    } else {
        *why = "expected http:// or https://";
        return PX_ECONFIG;
    }
    const char *hend, *h = p;
    if (*p == '[') {
        h = p + 1;
        hend = strchr(h, ']');
        if (hend == NULL) {
            *why = "an IPv6 address without its ']'";
            return PX_ECONFIG;
        }
        p = hend + 1;
    } else {
        hend = p + strcspn(p, ":/?#");
        p = hend;
    }
    size_t hlen = (size_t)(hend - h);
    if (hlen == 0 || hlen >= hostcap || hlen > PX_HOST_MAX) {
        *why = "no host, or a host over 255 bytes";
        return PX_ECONFIG;
    }
    for (size_t i = 0; i < hlen; i++) {
        unsigned char c = (unsigned char)h[i];
        if (c <= 0x20 || c >= 0x7f || c == '@') {
            *why = "a host with a space, '@' or a byte outside ASCII";
            return PX_ECONFIG;
        }
        host[i] = (char)tolower(c);
    }
    host[hlen] = '\0';
    if (*p == ':') {
        char *end;
        unsigned long v = strtoul(p + 1, &end, 10);
        if (end == p + 1 || v == 0 || v > 65535 || (*end != '\0' && *end != '/' && *end != '?')) {
            *why = "a port that is not 1 to 65535";
            return PX_ECONFIG;
        }
        *port = (unsigned)v;
        p = end;
    }
    if (*p != '\0' && *p != '/' && *p != '?') {
        *why = "something after the host that is not a port or a path";
        return PX_ECONFIG;
    }
    if (strchr(p, '#') != NULL || strpbrk(p, " \t\r\n") != NULL) {
        *why = "a fragment or a space in the path";
        return PX_ECONFIG;
    }
    int n = snprintf(path, pathcap, "%s%s", *p == '/' ? "" : "/", p);
    if (n < 0 || (size_t)n >= pathcap) {
        *why = "a path over the cap";
        return PX_ECONFIG;
    }
    return 0;
}

/* s with '"', '\' and bytes outside printable ASCII as \xNN (as on the control socket): the
 * summary is plain ASCII whatever the request held. */
static void px__ascii(const char *s, char *out, size_t cap)
{
    size_t o = 0;
    for (; *s != '\0' && o + 5 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c >= 0x7f || c == '\\' || c == '"')
            o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
        else
            out[o++] = (char)c;
    }
    out[o] = '\0';
}

int px_decide_body(const px_hold_info_t *q, uint64_t now, char *buf, size_t cap)
{
    char host[PX_HOST_MAX * 4 + 8], path[PX_HOLD_FIELD_MAX * 4 + 8], id[24];
    px__ascii(q->host, host, sizeof(host));
    px__ascii(q->path, path, sizeof(path));
    snprintf(id, sizeof(id), "h%" PRIu64, q->id);
    uint64_t left = q->deadline_ms > now ? q->deadline_ms - now : 0;
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I}", "id", id, "sandbox", q->scope_name,
                          "method", q->method, "host", host, "path", path, "seconds_left",
                          (json_int_t)((left + 999) / 1000));
    if (o == NULL)
        return PX_ENOMEM;
    size_t n = json_dumpb(o, buf, cap, JSON_COMPACT);
    json_decref(o);
    if (n == 0 || n >= cap)
        return PX_ETOOBIG;
    buf[n] = '\0'; /* json_dumpb does not end it */
    return (int)n;
}

int px_decide_parse_answer(const char *body, size_t len, int *allow, int *conversation,
                           const char **why)
{
    json_error_t err;
    json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &err);
    int rc = PX_EPARSE;
    *why = "not a JSON object";
    if (o != NULL && json_is_object(o)) {
        const char *dec = json_string_value(json_object_get(o, "decision"));
        json_t *sc = json_object_get(o, "scope");
        const char *scope = sc == NULL ? "once" : json_string_value(sc);
        *conversation = scope == NULL                        ? -1
                        : strcmp(scope, "once") == 0         ? PX_HOLD_SCOPE_ONCE
                        : strcmp(scope, "conversation") == 0 ? PX_HOLD_SCOPE_CONVERSATION
                        : strcmp(scope, "persist") == 0      ? PX_HOLD_SCOPE_PERSIST
                                                             : -1;
        if (dec == NULL || (strcmp(dec, "allow") != 0 && strcmp(dec, "deny") != 0))
            *why = "\"decision\" is not \"allow\" or \"deny\"";
        else if (*conversation < 0)
            *why = "\"scope\" is not \"once\", \"conversation\" or \"persist\"";
        else {
            *allow = strcmp(dec, "allow") == 0;
            rc = 0;
        }
    }
    json_decref(o);
    return rc;
}

/* The webhook's gauges in /metrics (px_metrics.h): set after every change of the breaker or of
 * the calls under way. */
static void px__gauges(const px_decide_t *d)
{
    px_metrics()->decide_in_flight = d->stopped ? 0 : (int64_t)d->ncalls;
    px_metrics()->decide_breaker_open = !d->stopped && d->breaker != PX__BR_CLOSED;
}

static void on_call_closed(uv_handle_t *h)
{
    px__dcall_t *c = px_container_of((uv_timer_t *)h, px__dcall_t, timer);
    px_decide_t *d = c->d;
    free(c);
    if (--d->handles == 0 && d->stopped)
        free(d);
}

/* Takes c out of the list and ends it (its call aborted when still under way). */
static void px__call_end(px__dcall_t *c)
{
    px_decide_t *d = c->d;
    for (px__dcall_t **p = &d->calls; *p != NULL; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            d->ncalls--;
            break;
        }
    if (c->up != NULL)
        px_up_abort(c->up);
    c->up = NULL;
    uv_timer_stop(&c->timer);
    uv_close((uv_handle_t *)&c->timer, on_call_closed);
    px__gauges(d);
}

static void px__breaker_ok(px_decide_t *d)
{
    d->fails = 0;
    if (d->breaker != PX__BR_CLOSED)
        px_diag(PX_DIAG_WARN, "decide: the webhook answered again: circuit breaker closed");
    d->breaker = PX__BR_CLOSED;
    px__gauges(d);
}

static void px__breaker_fail(px_decide_t *d, int trial, const char *why)
{
    d->fails++;
    if (trial || (d->breaker == PX__BR_CLOSED && d->fails >= PX_DECIDE_BREAKER_FAILS)) {
        uint64_t ms = px__test_ms("AIRLOCK_TEST_DECIDE_COOLDOWN_MS", PX_DECIDE_COOLDOWN_MS);
        d->breaker = PX__BR_OPEN;
        d->open_until = px_hold_now(d->ctx->holds) + ms;
        px_diag(PX_DIAG_WARN,
                "decide: circuit breaker open after %u failures in a row (last: %s): the webhook "
                "is not called for %" PRIu64 " ms; held requests wait for the control socket",
                d->fails, why, ms);
    }
    px__gauges(d);
}

/* The call for c ended as how says: allow or deny (with its scope conv), or a failure (why),
 * which denies. */
static void px__call_result(px__dcall_t *c, px_metrics_decide_t how, int conv, const char *why)
{
    px_decide_t *d = c->d;
    uint64_t id = c->id;
    int trial = c->trial;
    int allow = how == PX_M_DECIDE_ALLOW;
    px_metrics()->decide_calls[how]++;
    px__call_end(c); /* before deciding: the decision's event must not find it */
    if (how == PX_M_DECIDE_ALLOW || how == PX_M_DECIDE_DENY) {
        px__breaker_ok(d);
    } else {
        px_diag(PX_DIAG_WARN, "decide: h%" PRIu64 ": the webhook failed (%s): denied", id, why);
        px__breaker_fail(d, trial, why);
        allow = 0;
    }
    if (allow && conv == PX_HOLD_SCOPE_PERSIST) {
        char msg[512];
        int n = px_drafts_approve(d->ctx->holds, d->ctx->cfg, id, conv, NULL, NULL, "webhook", msg,
                                  sizeof(msg));
        if (n >= 0 || n == PX_ENOENT) /* PX_ENOENT: answered meanwhile */
            return;
        /* the drafts file could not take it: the request still goes on, this once */
        px_diag(PX_DIAG_WARN, "decide: h%" PRIu64 ": not persisted (%s): approved once", id, msg);
        conv = PX_HOLD_SCOPE_ONCE;
    }
    px_hold_decide(d->ctx->holds, id, allow ? PX_HOLD_APPROVED : PX_HOLD_DENIED, allow && conv,
                   "webhook"); /* PX_ENOENT: answered meanwhile; the first answer stands */
}

static void on_call_head(void *owner, px_msg_t *m)
{
    px__dcall_t *c = owner;
    if (m->status >= 200)
        c->status = m->status;
    px_msg_free(m);
}

static void on_call_data(void *owner, const char *data, size_t len)
{
    px__dcall_t *c = owner;
    if (c->over || len > sizeof(c->resp) - c->len) {
        c->over = 1;
        return;
    }
    memcpy(c->resp + c->len, data, len);
    c->len += len;
}

static void on_call_end(void *owner, const px_fields_t *t)
{
    (void)t;
    px__dcall_t *c = owner;
    px_up_done(c->up);
    c->up = NULL;
    char why[96];
    const char *w = why;
    int allow = 0, conv = 0;
    px_metrics_decide_t how = PX_M_DECIDE_MALFORMED;
    if (c->status < 200 || c->status > 299) {
        snprintf(why, sizeof(why), "HTTP %d", c->status);
        how = PX_M_DECIDE_ERROR;
    } else if (c->over) {
        snprintf(why, sizeof(why), "an answer over %d bytes", PX_DECIDE_RESP_MAX);
    } else if (px_decide_parse_answer(c->resp, c->len, &allow, &conv, &w) == 0) {
        how = allow ? PX_M_DECIDE_ALLOW : PX_M_DECIDE_DENY;
    }
    px__call_result(c, how, conv, w);
}

static void on_call_error(void *owner, const char *why)
{
    px__dcall_t *c = owner;
    c->up = NULL; /* the upstream client let go of it already */
    px__call_result(c, PX_M_DECIDE_ERROR, 0, why);
}

static void on_call_drain(void *owner)
{
    (void)owner;
}

static const px_up_cbs_t px__call_cbs = {
    .on_head = on_call_head,
    .on_data = on_call_data,
    .on_end = on_call_end,
    .on_error = on_call_error,
    .on_drain = on_call_drain,
};

static void on_call_timer(uv_timer_t *t)
{
    px__dcall_t *c = px_container_of(t, px__dcall_t, timer);
    if (!c->at_deadline) {
        px__call_result(c, PX_M_DECIDE_TIMEOUT, 0, "no answer in time");
        return;
    }
    /* the hold's own deadline: it times out (its answer says so) within its tick */
    px_decide_t *d = c->d;
    uint64_t id = c->id;
    int trial = c->trial;
    px_metrics()->decide_calls[PX_M_DECIDE_TIMEOUT]++;
    px__call_end(c);
    px_diag(PX_DIAG_WARN, "decide: h%" PRIu64 ": no answer before the hold timed out", id);
    px__breaker_fail(d, trial, "no answer before the hold timed out");
}

static void px__hdr(addon_req_t *h, const char *name, const char *value, size_t vlen)
{
    addon_header_t *f = &h->headers[h->nheaders++];
    f->name.base = name;
    f->name.len = strlen(name);
    f->value.base = value;
    f->value.len = vlen;
}

/* Whether a new question is sent: the breaker and the bound on calls under way say. */
static int px__may_call(px_decide_t *d, uint64_t now, int *trial)
{
    *trial = 0;
    if (d->ncalls >= PX_DECIDE_INFLIGHT_MAX)
        return 0;
    if (d->breaker == PX__BR_CLOSED)
        return 1;
    if (d->breaker == PX__BR_TRIAL || now < d->open_until)
        return 0; /* a trial is under way, or the cool-down */
    d->breaker = PX__BR_TRIAL;
    px_diag(PX_DIAG_WARN, "decide: circuit breaker half-open: one trial call to the webhook");
    *trial = 1;
    return 1;
}

/* Sends question q to the webhook. Failures before anything is sent leave it to the CLI. */
static void px__call(px_decide_t *d, const px_hold_info_t *q)
{
    uint64_t now = px_hold_now(d->ctx->holds);
    int trial;
    if (!px__may_call(d, now, &trial))
        return;
    px__dcall_t *c = calloc(1, sizeof(*c));
    addon_req_t *h = calloc(1, sizeof(*h));
    char *body = malloc(PX_HOLD_FIELD_MAX * 5 + 2048);
    int blen =
        body == NULL ? PX_ENOMEM : px_decide_body(q, now, body, PX_HOLD_FIELD_MAX * 5 + 2048);
    if (c == NULL || h == NULL || blen < 0) {
        px_diag(PX_DIAG_ERROR, "decide: h%" PRIu64 ": not sent: %s", q->id,
                px_strerror(blen < 0 ? blen : PX_ENOMEM));
        if (trial)
            d->breaker = PX__BR_OPEN; /* the next question tries again */
        free(c);
        free(h);
        free(body);
        return;
    }
    char clen[24];
    int cl = snprintf(clen, sizeof(clen), "%d", blen);
    h->method.base = "POST";
    h->method.len = 4;
    h->path.base = d->path;
    h->path.len = strlen(d->path);
    px__hdr(h, "Host", d->host_header, strlen(d->host_header));
    px__hdr(h, "Content-Type", "application/json", 16);
    px__hdr(h, "Accept", "application/json", 16);
    px__hdr(h, "User-Agent", "airlock/" AIRLOCK_VERSION, strlen("airlock/" AIRLOCK_VERSION));
    px__hdr(h, "Content-Length", clen, (size_t)cl);
    c->d = d;
    c->id = q->id;
    c->trial = trial;
    uv_timer_init(d->ctx->loop.uv, &c->timer);
    d->handles++;
    c->next = d->calls;
    d->calls = c;
    d->ncalls++;
    px__gauges(d);
    uint64_t ms = px__test_ms("AIRLOCK_TEST_DECIDE_TIMEOUT_MS", PX_DECIDE_TIMEOUT_MS);
    uint64_t left = q->deadline_ms > now ? q->deadline_ms - now : 0;
    c->at_deadline = left <= ms;
    uv_timer_start(&c->timer, on_call_timer, c->at_deadline ? left : ms, 0);
    c->up = px_up_open(d->up, d->host, (uint16_t)d->port, d->tls, h, PX_UP_BODY_LENGTH, 0,
                       &px__call_cbs, c);
    if (c->up != NULL) {
        px_up_data(c->up, body, (size_t)blen);
        px_up_end(c->up, NULL);
    } else { /* never decided from inside the table's call: the question waits */
        px_diag(PX_DIAG_ERROR, "decide: h%" PRIu64 ": not sent: out of memory", q->id);
        if (trial)
            d->breaker = PX__BR_OPEN;
        px__call_end(c);
    }
    free(h);
    free(body);
}

/* The hold table's events: a new question is sent; one answered elsewhere ends its call. */
static void on_question(void *arg, const px_hold_info_t *q, px_hold_outcome_t o, const char *by)
{
    px_decide_t *d = arg;
    if (o == PX_HOLD_PENDING && by == NULL) {
        px__call(d, q);
        return;
    }
    for (px__dcall_t *c = d->calls; c != NULL; c = c->next)
        if (c->id == q->id) {
            int trial = c->trial;
            px__call_end(c);
            if (o == PX_HOLD_TIMEOUT) { /* the hold's deadline came first: no answer in time */
                px_metrics()->decide_calls[PX_M_DECIDE_TIMEOUT]++;
                px_diag(PX_DIAG_WARN, "decide: h%" PRIu64 ": no answer before the hold timed out",
                        q->id);
                px__breaker_fail(d, trial, "no answer before the hold timed out");
            } else if (trial) { /* answered elsewhere first: the next question is the trial */
                d->breaker = PX__BR_OPEN;
                px__gauges(d);
            }
            return;
        }
}

int px_decide_start(px_ctx_t *ctx, px_upmgr_t *up, const char *url, px_decide_t **out)
{
    px_decide_t *d = calloc(1, sizeof(*d));
    if (d == NULL)
        return PX_ENOMEM;
    const char *why = NULL;
    if (strlen(url) >= sizeof(d->url) ||
        px_decide_parse_url(url, d->host, sizeof(d->host), &d->port, &d->tls, d->path,
                            sizeof(d->path), &why) != 0) {
        px_diag(PX_DIAG_ERROR, "--decide-url %s: %s", url, why != NULL ? why : "too long");
        free(d);
        return PX_ECONFIG;
    }
    snprintf(d->url, sizeof(d->url), "%s", url);
    int v6 = strchr(d->host, ':') != NULL;
    int dflt = d->port == (d->tls ? 443u : 80u);
    char port[8] = "";
    if (!dflt)
        snprintf(port, sizeof(port), ":%u", d->port);
    snprintf(d->host_header, sizeof(d->host_header), "%s%s%s%s", v6 ? "[" : "", d->host,
             v6 ? "]" : "", port);
    d->ctx = ctx;
    d->up = up;
    px_hold_set_decider(ctx->holds, on_question, d);
    *out = d;
    return 0;
}

void px_decide_stop(px_decide_t *d)
{
    if (d == NULL)
        return;
    px_hold_set_decider(d->ctx->holds, NULL, NULL);
    while (d->calls != NULL)
        px__call_end(d->calls);
    d->stopped = 1;
    px__gauges(d); /* no webhook any more: both gauges 0 */
    if (d->handles == 0)
        free(d);
}
