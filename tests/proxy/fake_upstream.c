/* A fake upstream client for the exchange's unit tests (#included by tests/proxy/test_px_xchg.c).
 *
 * It defines the functions of proxy/px_upstream.h the exchange calls (px_xchg*.c, px_ghapp.c),
 * so the linker takes them from here and never pulls px_upstream.o (nor px_upconn.o, px_uph2.o)
 * out of libairlock_proxy.a. It records what the exchange sends (the head as the addons left
 * it, the body bytes, the end and its trailers, pause/abort/done) and hands the test the
 * px_up_cbs_t callbacks to answer through.
 *
 * One request at a time: px_up_open() while another is open fails the test; a later one starts
 * the record anew (opens lists them all). After
 * px_up_abort(), px_up_done() or px_up_tunnel() the request is gone: any later call on it fails
 * the test (a use after free in the real client). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "addons/addon.h"
#include "proxy/px_upstream.h"
#include "proxy/px_uppeer.h"

#define FAKE_UP_HEAD_MAX 8192
#define FAKE_UP_BODY_MAX (256 * 1024)

struct px_upreq {
    int live;   /* opened and not yet aborted, done or tunnelled */
    int opened; /* px_up_open calls (each case opens at most once) */
    char host[256];
    uint16_t port;
    int tls;
    px_up_body_t body_mode;
    int is_head;
    /* "METHOD target\nName: value\n..." for the fields not marked removed */
    char head[FAKE_UP_HEAD_MAX];
    size_t head_len;
    char body[FAKE_UP_BODY_MAX];
    size_t body_len;
    int data_calls;
    int data_after_end;  /* bytes handed on after px_up_end (a bug in the exchange) */
    int ended;           /* px_up_end calls */
    char trailers[1024]; /* "name: value\n" of px_up_end's trailers */
    int aborted, done, tunnelled;
    int full;   /* what px_up_full answers */
    int refuse; /* px_up_open fails (no memory, no pool): the next open returns NULL */
    int paused; /* last px_up_pause */
    int pause_calls;
    const px_up_cbs_t *cbs;
    void *owner;
    /* "METHOD host:port target\n" per px_up_open, in order: a stage that makes requests of
     * its own (the GitHub App token) opens several one after the other */
    char opens[2048];
    size_t opens_len;
};

static struct px_upreq fake_up;

static void fake_up_reset(void)
{
    memset(&fake_up, 0, sizeof(fake_up));
}

static void fake_up_add(char *buf, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fake_up_add(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (n > 0 && *len + (size_t)n < cap)
        *len += (size_t)n;
}

static void fake_up_live(const px_upreq_t *r)
{
    assert_ptr_equal(r, &fake_up);
    assert_true(r->live); /* a call on a request the exchange let go of */
}

px_upreq_t *px_up_open(px_upmgr_t *m, const char *host, uint16_t port, int tls,
                       const addon_req_t *req, px_up_body_t body, int is_head,
                       const px_up_cbs_t *cbs, void *owner)
{
    (void)m;
    assert_false(fake_up.live);
    if (fake_up.refuse) {
        fake_up.refuse = 0;
        return NULL;
    }
    fake_up.opened++;
    /* what the test checks is the last request's: the earlier ones are in opens */
    fake_up.head_len = fake_up.body_len = 0;
    fake_up.head[0] = fake_up.trailers[0] = '\0';
    fake_up.data_calls = fake_up.data_after_end = fake_up.ended = 0;
    fake_up.aborted = fake_up.done = fake_up.tunnelled = 0;
    fake_up_add(fake_up.opens, sizeof(fake_up.opens), &fake_up.opens_len, "%.*s %s:%u %.*s\n",
                (int)req->method.len, req->method.base, host, (unsigned)port, (int)req->path.len,
                req->path.base);
    fake_up.live = 1;
    snprintf(fake_up.host, sizeof(fake_up.host), "%s", host);
    fake_up.port = port;
    fake_up.tls = tls;
    fake_up.body_mode = body;
    fake_up.is_head = is_head;
    fake_up.cbs = cbs;
    fake_up.owner = owner;
    fake_up_add(fake_up.head, sizeof(fake_up.head), &fake_up.head_len, "%.*s %.*s\n",
                (int)req->method.len, req->method.base, (int)req->target.len, req->target.base);
    for (size_t i = 0; i < req->nheaders; i++) {
        const addon_header_t *h = &req->headers[i];
        if (h->removed)
            continue;
        fake_up_add(fake_up.head, sizeof(fake_up.head), &fake_up.head_len, "%.*s: %.*s\n",
                    (int)h->name.len, h->name.base, (int)h->value.len, h->value.base);
    }
    return &fake_up;
}

px_upreq_t *px_up_open_raw(px_upmgr_t *m, const char *host, uint16_t port, const px_up_cbs_t *cbs,
                           void *owner)
{
    (void)m, (void)host, (void)port, (void)cbs, (void)owner;
    fail_msg("px_up_open_raw: no exchange opens a raw connection");
    return NULL;
}

void px_up_data(px_upreq_t *r, const char *data, size_t len)
{
    fake_up_live(r);
    if (r->ended)
        r->data_after_end++;
    assert_true(r->body_len + len <= sizeof(r->body));
    memcpy(r->body + r->body_len, data, len);
    r->body_len += len;
    r->data_calls++;
}

void px_up_end(px_upreq_t *r, const px_fields_t *t)
{
    fake_up_live(r);
    r->ended++;
    if (r->ended > 1 || t == NULL)
        return;
    size_t len = 0;
    for (size_t i = 0; i < t->n; i++)
        fake_up_add(r->trailers, sizeof(r->trailers), &len, "%.*s: %.*s\n", (int)t->names[i].len,
                    t->buf + t->names[i].off, (int)t->values[i].len, t->buf + t->values[i].off);
}

size_t px_up_queued(const px_upreq_t *r)
{
    fake_up_live(r);
    return r->full ? 1u << 20 : 0;
}

int px_up_full(const px_upreq_t *r)
{
    fake_up_live(r);
    return r->full;
}

void px_up_pause(px_upreq_t *r, int pause)
{
    fake_up_live(r);
    r->paused = pause;
    r->pause_calls++;
}

void px_up_tunnel(px_upreq_t *r, px_tunnel_t *t, int side)
{
    (void)t, (void)side;
    fake_up_live(r);
    r->tunnelled = 1;
    r->live = 0;
}

void px_up_done(px_upreq_t *r)
{
    fake_up_live(r);
    r->done = 1;
    r->live = 0;
}

void px_up_abort(px_upreq_t *r)
{
    fake_up_live(r);
    r->aborted = 1;
    r->live = 0;
}

/* The address the exchange's audit event names: a documentation address and the port asked
 * (px_uppeer.c reads a real connection, which the fake has not). */
int px_up_peer(const px_upreq_t *r, char *out, size_t cap)
{
    fake_up_live(r);
    return snprintf(out, cap, "192.0.2.1:%u", (unsigned)r->port);
}

/* The upstream's side: the test answers through the callbacks the exchange gave. on_error
 * lets go of the request (the real client frees it before the callback). */
static void fake_up_error(const char *why)
{
    fake_up_live(&fake_up);
    fake_up.live = 0;
    fake_up.cbs->on_error(fake_up.owner, why);
}
