/* The HTTP/2 server codec (px_h2.c), driven by an in-memory nghttp2 client session: the client's
 * bytes go to px_h2_feed(), px_h2's output to the client. Requests, bodies, trailers, streams
 * answered out of order, a stream the client never reads, resets, and the attacks with their
 * limits (rapid reset, header list over the cap, CONTINUATION, PING and SETTINGS floods, more
 * streams than allowed, malformed requests). Raw frames are written by hand where a well-behaved
 * client library would refuse to send them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <llhttp.h>
#include <nghttp2/nghttp2.h>

#include "base/px_err.h"
#include "http/px_h2.h"
#include "proxy/px_precheck.h"

#define NS 512

/* ---- the server side's owner: records what the codec hands out ---- */
typedef struct sreq {
    int32_t sid;
    px_msg_t *m;
    px_h2_req_t rq;
    char body[256 * 1024];
    size_t blen;
    int ended, reset;
    uint32_t code;
    int ntrailers;
    char trailer[256];
} sreq_t;

typedef struct srv {
    px_h2_t *h;
    sreq_t *req;
    int nreq;
    int consume; /* consume body bytes as they come */
    int answer;  /* answer each request at its end: 200, "ok <sid>" */
    int drains;
    int refused, refused_status;
    const char *refused_reason;
    int feed_err;
    size_t max_out; /* the largest output handed out at once */
} srv_t;

static sreq_t *sfind(srv_t *s, int32_t sid)
{
    for (int i = 0; i < s->nreq; i++)
        if (s->req[i].sid == sid)
            return &s->req[i];
    fail_msg("unknown stream %d", sid);
    return NULL;
}

static void on_request(void *o, int32_t sid, px_msg_t *m, const px_h2_req_t *rq)
{
    srv_t *s = o;
    assert_true(s->nreq < NS);
    sreq_t *r = &s->req[s->nreq++];
    r->sid = sid;
    r->m = m;
    r->rq = *rq;
    for (size_t i = 0; i < m->n; i++) {
        assert_true(m->names[i].off + m->names[i].len <= m->len);
        assert_true(m->values[i].off + m->values[i].len <= m->len);
    }
}

static void on_data(void *o, int32_t sid, const char *d, size_t len)
{
    srv_t *s = o;
    sreq_t *r = sfind(s, sid);
    assert_true(r->blen + len <= sizeof(r->body));
    memcpy(r->body + r->blen, d, len);
    r->blen += len;
    if (s->consume)
        px_h2_consume(s->h, sid, len);
}

static void answer(srv_t *s, int32_t sid)
{
    char b[32];
    int n = snprintf(b, sizeof(b), "ok %d", sid);
    px_h2_field_t f[] = {{"Content-Type", 12, "text/plain", 10}, {"Connection", 10, "close", 5}};
    assert_int_equal(px_h2_respond(s->h, sid, 200, f, 2, 1), 0);
    assert_int_equal(px_h2_send_data(s->h, sid, b, (size_t)n), 0);
    assert_int_equal(px_h2_end(s->h, sid, NULL), 0);
}

static void on_end(void *o, int32_t sid, const px_fields_t *t)
{
    srv_t *s = o;
    sreq_t *r = sfind(s, sid);
    r->ended = 1;
    for (size_t i = 0; t != NULL && i < t->n; i++) {
        r->ntrailers++;
        snprintf(r->trailer + strlen(r->trailer), sizeof(r->trailer) - strlen(r->trailer),
                 "%.*s=%.*s;", (int)t->names[i].len, t->buf + t->names[i].off,
                 (int)t->values[i].len, t->buf + t->values[i].off);
    }
    if (s->answer)
        answer(s, sid);
}

static void on_reset(void *o, int32_t sid, uint32_t code)
{
    sreq_t *r = sfind(o, sid);
    assert_int_equal(r->reset, 0);
    r->reset = 1;
    r->code = code;
}

static void on_drain(void *o, int32_t sid)
{
    ((srv_t *)o)->drains++;
}

static void on_refused(void *o, int32_t sid, int status, const char *reason)
{
    srv_t *s = o;
    s->refused++;
    s->refused_status = status;
    s->refused_reason = reason;
}

static const px_h2_cbs_t scbs = {on_request, on_data, on_end, on_reset, on_drain, on_refused};

static void srv_init(srv_t *s)
{
    memset(s, 0, sizeof(*s));
    s->req = calloc(NS, sizeof(*s->req));
    assert_non_null(s->req);
    s->h = px_h2_new(&scbs, s);
    assert_non_null(s->h);
    s->consume = 1;
}

static void srv_free(srv_t *s)
{
    px_h2_free(s->h);
    for (int i = 0; i < s->nreq; i++)
        px_msg_free(s->req[i].m);
    free(s->req);
}

/* ---- the client ---- */
typedef struct cst {
    int status;
    char body[128 * 1024];
    size_t blen;
    int closed;
    uint32_t code;
    char trailer[256];
    /* a request body to send */
    const char *up;
    size_t up_len, up_off;
    int up_trailers;
} cst_t;

typedef struct cli {
    nghttp2_session *ses;
    cst_t *st;
    int goaway;
    uint32_t goaway_code;
    int32_t stall; /* never consume this stream's bytes */
} cli_t;

static cst_t *cst(cli_t *c, int32_t sid)
{
    assert_true(sid > 0 && sid / 2 < NS);
    return &c->st[sid / 2];
}

static int c_header(nghttp2_session *ses, const nghttp2_frame *f, const uint8_t *n, size_t nl,
                    const uint8_t *v, size_t vl, uint8_t flags, void *ud)
{
    cst_t *t = cst(ud, f->hd.stream_id);
    if (nl == 7 && memcmp(n, ":status", 7) == 0)
        t->status = atoi((const char *)v);
    else if (f->headers.cat == NGHTTP2_HCAT_HEADERS)
        snprintf(t->trailer + strlen(t->trailer), sizeof(t->trailer) - strlen(t->trailer),
                 "%.*s=%.*s;", (int)nl, n, (int)vl, v);
    return 0;
}

static int c_data(nghttp2_session *ses, uint8_t flags, int32_t sid, const uint8_t *d, size_t len,
                  void *ud)
{
    cli_t *c = ud;
    cst_t *t = cst(c, sid);
    if (t->blen + len <= sizeof(t->body))
        memcpy(t->body + t->blen, d, len);
    t->blen += len;
    if (sid != c->stall)
        nghttp2_session_consume(ses, sid, len);
    else
        nghttp2_session_consume_connection(ses, len);
    return 0;
}

static int c_close(nghttp2_session *ses, int32_t sid, uint32_t code, void *ud)
{
    cst_t *t = cst(ud, sid);
    t->closed = 1;
    t->code = code;
    return 0;
}

static int c_frame(nghttp2_session *ses, const nghttp2_frame *f, void *ud)
{
    cli_t *c = ud;
    if (f->hd.type == NGHTTP2_GOAWAY) {
        c->goaway = 1;
        c->goaway_code = f->goaway.error_code;
    }
    return 0;
}

static ssize_t c_read(nghttp2_session *ses, int32_t sid, uint8_t *buf, size_t len, uint32_t *flags,
                      nghttp2_data_source *src, void *ud)
{
    cst_t *t = src->ptr;
    size_t n = t->up_len - t->up_off;
    if (n > len)
        n = len;
    memcpy(buf, t->up + t->up_off, n);
    t->up_off += n;
    if (t->up_off == t->up_len) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        if (t->up_trailers) {
            nghttp2_nv tr[] = {{(uint8_t *)"grpc-status", (uint8_t *)"0", 11, 1, 0},
                               {(uint8_t *)"x-sum", (uint8_t *)"abc", 5, 3, 0}};
            *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
            assert_int_equal(nghttp2_submit_trailer(ses, sid, tr, 2), 0);
        }
    }
    return (ssize_t)n;
}

static void cli_init(cli_t *c, uint32_t peer_max_streams, size_t max_block)
{
    memset(c, 0, sizeof(*c));
    c->st = calloc(NS, sizeof(*c->st));
    assert_non_null(c->st);
    nghttp2_session_callbacks *cb;
    assert_int_equal(nghttp2_session_callbacks_new(&cb), 0);
    nghttp2_session_callbacks_set_on_header_callback(cb, c_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, c_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, c_close);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, c_frame);
    nghttp2_option *o;
    assert_int_equal(nghttp2_option_new(&o), 0);
    nghttp2_option_set_no_auto_window_update(o, 1);
    if (peer_max_streams)
        nghttp2_option_set_peer_max_concurrent_streams(o, peer_max_streams);
    if (max_block)
        nghttp2_option_set_max_send_header_block_length(o, max_block);
    assert_int_equal(nghttp2_session_client_new2(&c->ses, cb, c, o), 0);
    nghttp2_session_callbacks_del(cb);
    nghttp2_option_del(o);
    assert_int_equal(nghttp2_submit_settings(c->ses, NGHTTP2_FLAG_NONE, NULL, 0), 0);
    /* a large connection window: only the stalled stream's own window holds */
    assert_int_equal(
        nghttp2_session_set_local_window_size(c->ses, NGHTTP2_FLAG_NONE, 0, 16 * 1024 * 1024), 0);
}

static void cli_free(cli_t *c)
{
    nghttp2_session_del(c->ses);
    free(c->st);
}

#define NV(n, v)                                                                                   \
    {                                                                                              \
        (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), 0                                \
    }

static ssize_t c_read_by_stream(nghttp2_session *ses, int32_t sid, uint8_t *buf, size_t len,
                                uint32_t *flags, nghttp2_data_source *src, void *ud)
{
    nghttp2_data_source s = {.ptr = cst(ud, sid)};
    return c_read(ses, sid, buf, len, flags, &s, ud);
}

/* Submits a request with fields nv[0..n) and body (may be NULL). Returns the stream id. */
static int32_t cli_req(cli_t *c, const nghttp2_nv *nv, size_t n, const char *body, size_t blen,
                       int trailers)
{
    nghttp2_data_provider prd = {.read_callback = c_read_by_stream};
    int32_t sid = nghttp2_submit_request(c->ses, NULL, nv, n, body ? &prd : NULL, NULL);
    assert_true(sid > 0);
    cst_t *t = cst(c, sid);
    memset(t, 0, sizeof(*t));
    t->up = body;
    t->up_len = blen;
    t->up_trailers = trailers;
    return sid;
}

static int32_t cli_get(cli_t *c, const char *path)
{
    nghttp2_nv nv[] = {NV(":method", "GET"), NV(":scheme", "https"),
                       NV(":authority", "example.com"), NV(":path", path),
                       NV("user-agent", "test")};
    return cli_req(c, nv, 5, NULL, 0, 0);
}

/* Moves bytes both ways until neither side has anything to say. */
static void pump(cli_t *c, srv_t *s)
{
    for (int round = 0; round < 100000; round++) {
        int moved = 0;
        const uint8_t *p;
        ssize_t n;
        while ((n = nghttp2_session_mem_send(c->ses, &p)) > 0) {
            moved = 1;
            int rc = px_h2_feed(s->h, (const char *)p, (size_t)n);
            if (rc != 0 && s->feed_err == 0)
                s->feed_err = rc;
        }
        const char *o;
        size_t ol;
        while (px_h2_take_output(s->h, &o, &ol) == 0 && ol > 0) {
            moved = 1;
            if (ol > s->max_out)
                s->max_out = ol;
            nghttp2_session_mem_recv(c->ses, (const uint8_t *)o, ol);
        }
        if (!moved)
            return;
    }
    fail_msg("pump did not settle");
}

static int field_count(const px_msg_t *m, const char *name)
{
    return px_msg_count(m, name);
}

static const char *field(const px_msg_t *m, const char *name, char *out, size_t cap)
{
    int i = px_msg_find(m, name);
    if (i < 0)
        return NULL;
    snprintf(out, cap, "%.*s", (int)m->values[i].len, m->buf + m->values[i].off);
    return out;
}

static int span_is(const px_msg_t *m, px_span_t s, const char *lit)
{
    return s.len == strlen(lit) && memcmp(m->buf + s.off, lit, s.len) == 0;
}

/* ---- raw frames, for what no client library sends ---- */
static size_t frame(uint8_t *out, uint8_t type, uint8_t flags, uint32_t sid, const void *p,
                    size_t len)
{
    out[0] = (uint8_t)(len >> 16);
    out[1] = (uint8_t)(len >> 8);
    out[2] = (uint8_t)len;
    out[3] = type;
    out[4] = flags;
    out[5] = (uint8_t)(sid >> 24);
    out[6] = (uint8_t)(sid >> 16);
    out[7] = (uint8_t)(sid >> 8);
    out[8] = (uint8_t)sid;
    if (len)
        memcpy(out + 9, p, len);
    return 9 + len;
}

static size_t preface(uint8_t *out)
{
    memcpy(out, NGHTTP2_CLIENT_MAGIC, NGHTTP2_CLIENT_MAGIC_LEN);
    return NGHTTP2_CLIENT_MAGIC_LEN + frame(out + NGHTTP2_CLIENT_MAGIC_LEN, 4, 0, 0, NULL, 0);
}

/* Takes all output of s; returns the GOAWAY error code in it, or -1 when none came. */
static long drain_goaway(srv_t *s)
{
    long code = -1;
    const char *o;
    size_t ol;
    uint8_t buf[1 << 16];
    size_t have = 0;
    while (px_h2_take_output(s->h, &o, &ol) == 0 && ol > 0) {
        if (ol > s->max_out)
            s->max_out = ol;
        /* frames may straddle takes: keep a tail */
        assert_true(have + ol <= sizeof(buf) || have == 0);
        size_t off = 0;
        while (off < ol) {
            size_t k = ol - off < sizeof(buf) - have ? ol - off : sizeof(buf) - have;
            memcpy(buf + have, o + off, k);
            have += k;
            off += k;
            size_t p = 0;
            while (have - p >= 9) {
                size_t len = (size_t)buf[p] << 16 | (size_t)buf[p + 1] << 8 | buf[p + 2];
                if (have - p < 9 + len)
                    break;
                if (buf[p + 3] == 7 && len >= 8)
                    code = (long)((uint32_t)buf[p + 13] << 24 | (uint32_t)buf[p + 14] << 16 |
                                  (uint32_t)buf[p + 15] << 8 | buf[p + 16]);
                p += 9 + len;
            }
            memmove(buf, buf + p, have - p);
            have -= p;
        }
    }
    return code;
}

/* ---- tests ---- */

static void test_px_h2_get(void **state)
{
    srv_t s;
    cli_t c;
    srv_init(&s);
    cli_init(&c, 0, 0);
    s.answer = 1;
    int32_t sid = cli_get(&c, "/a?b=1");
    pump(&c, &s);
    assert_int_equal(s.nreq, 1);
    px_msg_t *m = s.req[0].m;
    char v[64];
    assert_int_equal(m->method, HTTP_GET);
    assert_true(span_is(m, m->target, "/a?b=1"));
    assert_true(m->is_request && m->major == 2 && m->minor == 0);
    assert_true(m->flags & PX_MSG_NO_BODY);
    assert_false(m->flags & (PX_MSG_LENGTH | PX_MSG_CHUNKED));
    assert_true(span_is(m, m->names[0], "host")); /* made from :authority, first */
    assert_string_equal(field(m, "host", v, sizeof(v)), "example.com");
    assert_string_equal(field(m, "user-agent", v, sizeof(v)), "test");
    assert_true(span_is(m, s.req[0].rq.scheme, "https"));
    assert_true(span_is(m, s.req[0].rq.authority, "example.com"));
    assert_int_equal(s.req[0].rq.protocol.len, 0);
    assert_int_equal(s.req[0].rq.host_conflict, 0);
    assert_int_equal(c.st[sid / 2].status, 200);
    assert_int_equal(c.st[sid / 2].blen, 4);
    assert_memory_equal(c.st[sid / 2].body, "ok 1", 4);
    assert_true(c.st[sid / 2].closed);
    assert_int_equal(c.st[sid / 2].code, 0);
    assert_int_equal(s.req[0].reset, 0);
    assert_false(px_h2_want_write(s.h));
    assert_false(px_h2_done(s.h));
    px_h2_shutdown(s.h);
    pump(&c, &s);
    assert_true(c.goaway);
    assert_int_equal(c.goaway_code, 0);
    assert_true(px_h2_done(s.h));
    cli_free(&c);
    srv_free(&s);
}

/* An idle session after one small exchange keeps two pages of nghttp2's large blocks in memory
 * (one of its 16 KiB frame buffer, one of a 4 KiB table): they have pages of their own, faulted
 * in only where bytes were written. With malloc the count was 0 (nothing paged), and the RSS of
 * those blocks ~20 KiB on a box whose heap TLS buffers had touched before. */
static void test_px_h2_idle_memory(void **state)
{
    srv_t s;
    cli_t c;
    srv_init(&s);
    cli_init(&c, 0, 0);
    s.answer = 1;
    int32_t sid = cli_get(&c, "/a");
    pump(&c, &s);
    assert_int_equal(c.st[sid / 2].status, 200);
    size_t res = px_h2_paged_resident(s.h);
    assert_true(res > 0);         /* the frame buffer is paged, and frames went through it */
    assert_true(res <= 2 * 4096); /* ... two pages of them, not 20 KiB */
    cli_free(&c);
    srv_free(&s);
}

/* Gone quiet, a session gives back what nghttp2's large blocks hold for nothing: its frame
 * buffer (no frame in hand) and its stream table (no stream left; closed streams are not kept).
 * Before, the two pages stayed, and after a large answer the frame buffer's five. The session
 * then goes on as before. */
static void test_px_h2_idle_trim(void **state)
{
    srv_t s;
    cli_t c;
    srv_init(&s);
    cli_init(&c, 0, 0);
    s.answer = 1;
    int32_t sid = cli_get(&c, "/a");
    pump(&c, &s);
    assert_int_equal(c.st[sid / 2].status, 200);
    assert_true(px_h2_paged_resident(s.h) > 0);
    assert_true(px_h2_trim(s.h) > 0);
    assert_int_equal(px_h2_paged_resident(s.h), 0);
    /* a large answer: every page of the frame buffer is written, then given back again */
    static char big[40000];
    memset(big, 'b', sizeof(big));
    s.answer = 0;
    sid = cli_get(&c, "/b");
    pump(&c, &s);
    assert_int_equal(px_h2_respond(s.h, sid, 200, NULL, 0, 1), 0);
    assert_int_equal(px_h2_send_data(s.h, sid, big, sizeof(big)), 0);
    assert_int_equal(px_h2_end(s.h, sid, NULL), 0);
    pump(&c, &s);
    assert_int_equal(c.st[sid / 2].blen, sizeof(big));
    assert_memory_equal(c.st[sid / 2].body, big, sizeof(big));
    assert_true(c.st[sid / 2].closed);
    assert_true(px_h2_paged_resident(s.h) >= 4 * 4096);
    assert_true(px_h2_trim(s.h) >= 4 * 4096);
    assert_int_equal(px_h2_paged_resident(s.h), 0);
    assert_int_equal(px_h2_trim(s.h), 0); /* nothing left to give */
    s.answer = 1;
    sid = cli_get(&c, "/c");
    pump(&c, &s);
    assert_int_equal(c.st[sid / 2].status, 200);
    assert_memory_equal(c.st[sid / 2].body, "ok 5", 4);
    assert_false(c.goaway);
    cli_free(&c);
    srv_free(&s);
}

/* A streaming answer's output buffer is kept from one px_h2_take_output to the next (it was
 * freed after each: glibc then gave the heap's top back and faulted it in again, a brk pair per
 * 40 KiB of a download); px_h2_trim_output frees it, and the session goes on. */
static void test_px_h2_output_kept(void **state)
{
    srv_t s;
    cli_t c;
    srv_init(&s);
    cli_init(&c, 0, 0);
    static char big[40000];
    memset(big, 'k', sizeof(big));
    int32_t sid = cli_get(&c, "/k");
    pump(&c, &s);
    assert_int_equal(px_h2_respond(s.h, sid, 200, NULL, 0, 1), 0);
    assert_int_equal(px_h2_send_data(s.h, sid, big, sizeof(big)), 0);
    pump(&c, &s);
    assert_int_equal(c.st[sid / 2].blen, sizeof(big));
    size_t held = px_h2_output_held(s.h);
    assert_true(held >= 16384); /* kept: the stream goes on */
    assert_int_equal(px_h2_send_data(s.h, sid, big, sizeof(big)), 0);
    pump(&c, &s);
    assert_int_equal(c.st[sid / 2].blen, 2 * sizeof(big));
    assert_int_equal(px_h2_output_held(s.h), held); /* the same buffer, not a new one */
    assert_int_equal(px_h2_trim_output(s.h), held);
    assert_int_equal(px_h2_output_held(s.h), 0);
    assert_int_equal(px_h2_trim_output(s.h), 0);
    assert_int_equal(px_h2_end(s.h, sid, NULL), 0);
    pump(&c, &s);
    assert_true(c.st[sid / 2].closed);
    assert_memory_equal(c.st[sid / 2].body + sizeof(big), big, sizeof(big));
    assert_int_equal(px_h2_trim(s.h) > 0, 1);
    assert_int_equal(px_h2_output_held(s.h), 0);
    cli_free(&c);
    srv_free(&s);
}

static void test_px_h2_post_trailers(void **state)
{
    srv_t s;
    cli_t c;
    srv_init(&s);
    cli_init(&c, 0, 0);
    static char body[40000];
    for (size_t i = 0; i < sizeof(body); i++)
        body[i] = (char)('a' + i % 26);
    nghttp2_nv nv[] = {NV(":method", "POST"),         NV(":scheme", "https"),
                       NV(":authority", "h.test"),    NV(":path", "/up"),
                       NV("content-length", "40000"), NV("te", "trailers"),
                       NV("cookie", "a=1"),           NV("cookie", "b=2")};
    int32_t sid = cli_req(&c, nv, 8, body, sizeof(body), 1);
    pump(&c, &s);
    assert_int_equal(s.nreq, 1);
    sreq_t *r = &s.req[0];
    px_msg_t *m = r->m;
    char v[64];
    assert_int_equal(m->method, HTTP_POST);
    assert_true(m->flags & PX_MSG_LENGTH);
    assert_false(m->flags & PX_MSG_NO_BODY);
    assert_int_equal(m->length, 40000);
    assert_int_equal(field_count(m, "cookie"), 1);
    assert_string_equal(field(m, "cookie", v, sizeof(v)), "a=1; b=2");
    assert_int_equal(r->blen, sizeof(body));
    assert_memory_equal(r->body, body, sizeof(body));
    assert_true(r->ended);
    assert_int_equal(r->ntrailers, 2);
    assert_string_equal(r->trailer, "grpc-status=0;x-sum=abc;");

    /* the response, with trailers */
    px_h2_field_t f[] = {{"Content-Type", 12, "application/grpc", 16},
                         {"Transfer-Encoding", 17, "chunked", 7}};
    assert_int_equal(px_h2_respond(s.h, sid, 200, f, 2, 1), 0);
    assert_int_equal(px_h2_respond(s.h, sid, 200, f, 2, 1), PX_ESTATE);
    assert_int_equal(px_h2_send_data(s.h, sid, "xyz", 3), 0);
    px_fields_t t = {0};
    memcpy(t.buf, "Grpc-Statusgrpc-message0fine", 28);
    t.n = 2;
    t.names[0] = (px_span_t){0, 11};
    t.names[1] = (px_span_t){11, 12};
    t.values[0] = (px_span_t){23, 1};
    t.values[1] = (px_span_t){24, 4};
    t.len = 28;
    assert_int_equal(px_h2_end(s.h, sid, &t), 0);
    memset(&t, 'z', sizeof(t)); /* borrowed for the call only */
    assert_int_equal(px_h2_send_data(s.h, sid, "late", 4), PX_ESTATE);
    pump(&c, &s);
    cst_t *ct = &c.st[sid / 2];
    assert_int_equal(ct->status, 200);
    assert_int_equal(ct->blen, 3);
    assert_string_equal(ct->trailer, "grpc-status=0;grpc-message=fine;");
    assert_true(ct->closed);
    assert_int_equal(ct->code, 0);
    assert_int_equal(r->reset, 0);
    cli_free(&c);
    srv_free(&s);
}

/* An interim 103, then a final response with no body bytes and trailers only (gRPC's error
 * shape); a HEAD-like bodiless response needs no px_h2_end. */
static void test_px_h2_interim_and_empty_body(void **state)
{
    srv_t s;
    cli_t c;
    srv_init(&s);
    cli_init(&c, 0, 0);
    int32_t a = cli_get(&c, "/a"), b = cli_get(&c, "/b");
    pump(&c, &s);
    px_h2_field_t link = {"Link", 4, "</s.css>; rel=preload", 21};
    assert_int_equal(px_h2_respond(s.h, a, 103, &link, 1, 0), 0);
    assert_int_equal(px_h2_respond(s.h, a, 101, NULL, 0, 0), PX_ESTATE);
    assert_int_equal(px_h2_respond(s.h, a, 200, NULL, 0, 1), 0);
    px_fields_t t = {0};
    memcpy(t.buf, "grpc-status13", 13);
    t.n = 1;
    t.names[0] = (px_span_t){0, 11};
    t.values[0] = (px_span_t){11, 2};
    t.len = 13;
    assert_int_equal(px_h2_end(s.h, a, &t), 0);
    assert_int_equal(px_h2_respond(s.h, b, 204, NULL, 0, 0), 0);
    assert_int_equal(px_h2_end(s.h, b, NULL), 0);
    assert_int_equal(px_h2_send_data(s.h, b, "x", 1), PX_ESTATE);
    pump(&c, &s);
    assert_int_equal(c.st[a / 2].status, 200);
    assert_int_equal(c.st[a / 2].blen, 0);
    assert_string_equal(c.st[a / 2].trailer, "grpc-status=13;");
    assert_true(c.st[a / 2].closed);
    assert_int_equal(c.st[a / 2].code, 0);
    assert_int_equal(c.st[b / 2].status, 204);
    assert_true(c.st[b / 2].closed);
    assert_int_equal(s.req[0].reset + s.req[1].reset, 0);
    cli_free(&c);
    srv_free(&s);
}

static void test_px_h2_out_of_order(void **state)
{
    srv_t s;
    cli_t c;
    srv_init(&s);
    cli_init(&c, 0, 0);
    int32_t id[3] = {cli_get(&c, "/1"), cli_get(&c, "/2"), cli_get(&c, "/3")};
    pump(&c, &s);
    assert_int_equal(s.nreq, 3);
    int order[3] = {2, 0, 1};
    for (int k = 0; k < 3; k++) {
        int i = order[k];
        answer(&s, id[i]);
        pump(&c, &s);
        assert_true(c.st[id[i] / 2].closed);
        for (int j = 0; j < 3; j++)
            if (j != i && (k == 0 || j != order[k - 1]) && (k < 2 || j != order[0]))
                assert_false(c.st[id[j] / 2].closed);
    }
    for (int i = 0; i < 3; i++) {
        char want[16];
        snprintf(want, sizeof(want), "ok %d", id[i]);
        assert_int_equal(c.st[id[i] / 2].blen, strlen(want));
        assert_memory_equal(c.st[id[i] / 2].body, want, strlen(want));
    }
    cli_free(&c);
    srv_free(&s);
}

/* One stream is never read by the client: its window closes, its queue fills to the high-water
 * mark and stays bounded; the other streams complete. */
static void test_px_h2_stalled_stream(void **state)
{
    srv_t s;
    cli_t c;
    srv_init(&s);
    cli_init(&c, 0, 0);
    int32_t stalled = cli_get(&c, "/stalled");
    int32_t other[3] = {cli_get(&c, "/a"), cli_get(&c, "/b"), cli_get(&c, "/c")};
    c.stall = stalled;
    pump(&c, &s);
    assert_int_equal(s.nreq, 4);
    assert_int_equal(px_h2_respond(s.h, stalled, 200, NULL, 0, 1), 0);
    static char chunk[16384];
    memset(chunk, 'x', sizeof(chunk));
    size_t sent = 0;
    /* the owner's rule: feed while the queue is under the high-water mark */
    for (int i = 0; i < 200; i++) {
        while (px_h2_stream_queued(s.h, stalled) <= PX_H2_QUEUE_HIGH) {
            assert_int_equal(px_h2_send_data(s.h, stalled, chunk, sizeof(chunk)), 0);
            sent += sizeof(chunk);
        }
        pump(&c, &s);
    }
    size_t q = px_h2_stream_queued(s.h, stalled);
    assert_true(q > PX_H2_QUEUE_HIGH && q <= PX_H2_QUEUE_HIGH + sizeof(chunk));
    /* what reached the client is what its stream window allowed */
    assert_int_equal(c.st[stalled / 2].blen, 65535);
    assert_int_equal(sent, 65535 + q);
    assert_int_equal(px_h2_stream_sendable(s.h, stalled), 0); /* its window is closed */
    assert_int_equal(px_h2_stream_sendable(s.h, other[0]), 65535);
    assert_int_equal(px_h2_stream_sendable(s.h, 999), 0);
    /* the others complete meanwhile, each with a body far larger than the stalled window */
    static char big[200000];
    memset(big, 'y', sizeof(big));
    for (int i = 0; i < 3; i++) {
        assert_int_equal(px_h2_respond(s.h, other[i], 200, NULL, 0, 1), 0);
        size_t off = 0;
        while (off < sizeof(big)) {
            size_t n = sizeof(big) - off < 50000 ? sizeof(big) - off : 50000;
            if (px_h2_stream_queued(s.h, other[i]) <= PX_H2_QUEUE_HIGH) {
                assert_int_equal(px_h2_send_data(s.h, other[i], big + off, n), 0);
                off += n;
            }
            pump(&c, &s);
        }
        assert_int_equal(px_h2_end(s.h, other[i], NULL), 0);
    }
    pump(&c, &s);
    for (int i = 0; i < 3; i++) {
        assert_true(c.st[other[i] / 2].closed);
        assert_int_equal(c.st[other[i] / 2].blen, sizeof(big));
    }
    assert_false(c.st[stalled / 2].closed);
    assert_true(s.max_out <= PX_H2_OUT_MAX + 16384 + 9);
    /* a hard cap on an owner that ignores the queue */
    size_t left = PX_H2_QUEUE_MAX - px_h2_stream_queued(s.h, stalled);
    char *huge = calloc(1, left + 1);
    assert_int_equal(px_h2_send_data(s.h, stalled, huge, left + 1), PX_ETOOBIG);
    free(huge);
    /* the client reads again: the queue drains and on_drain fires */
    int drains = s.drains;
    c.stall = 0;
    nghttp2_session_consume_stream(c.ses, stalled, 65535);
    pump(&c, &s);
    assert_true(s.drains > drains);
    assert_true(px_h2_stream_queued(s.h, stalled) <= PX_H2_QUEUE_LOW);
    cli_free(&c);
    srv_free(&s);
}

/* Flow control toward the owner: no more than the window unconsumed, more once consumed. */
static void test_px_h2_request_window(void **state)
{
    srv_t s;
    cli_t c;
    srv_init(&s);
    cli_init(&c, 0, 0);
    s.consume = 0;
    static char body[200000];
    memset(body, 'b', sizeof(body));
    nghttp2_nv nv[] = {NV(":method", "PUT"), NV(":scheme", "https"), NV(":authority", "h.test"),
                       NV(":path", "/big")};
    int32_t sid = cli_req(&c, nv, 4, body, sizeof(body), 0);
    int32_t g = cli_get(&c, "/other");
    s.answer = 0;
    pump(&c, &s);
    sreq_t *r = sfind(&s, sid);
    assert_false(r->m->flags & (PX_MSG_LENGTH | PX_MSG_NO_BODY)); /* length unknown */
    assert_int_equal(r->blen, PX_H2_STREAM_WINDOW);
    assert_false(r->ended);
    /* the other stream is not held up */
    answer(&s, g);
    pump(&c, &s);
    assert_true(c.st[g / 2].closed);
    while (!r->ended) {
        size_t before = r->blen;
        px_h2_consume(s.h, sid, 40000); /* over half the window: WINDOW_UPDATE */
        pump(&c, &s);
        assert_true(r->blen > before);
        assert_true(r->blen <= before + PX_H2_STREAM_WINDOW);
    }
    assert_int_equal(r->blen, sizeof(body));
    cli_free(&c);
    srv_free(&s);
}

static void test_px_h2_client_reset(void **state)
{
    srv_t s;
    cli_t c;
    srv_init(&s);
    cli_init(&c, 0, 0);
    static char body[100000];
    nghttp2_nv nv[] = {NV(":method", "POST"), NV(":scheme", "https"), NV(":authority", "h.test"),
                       NV(":path", "/up")};
    s.consume = 0; /* the body stops at the window: the stream is mid-body */
    int32_t sid = cli_req(&c, nv, 4, body, sizeof(body), 0);
    pump(&c, &s);
    assert_int_equal(s.nreq, 1);
    assert_true(s.req[0].blen > 0);
    assert_false(s.req[0].ended);
    nghttp2_submit_rst_stream(c.ses, NGHTTP2_FLAG_NONE, sid, NGHTTP2_CANCEL);
    pump(&c, &s);
    assert_true(s.req[0].reset);
    assert_int_equal(s.req[0].code, NGHTTP2_CANCEL);
    assert_int_equal(px_h2_respond(s.h, sid, 200, NULL, 0, 0), PX_ESTATE);
    assert_int_equal(px_h2_stream_queued(s.h, sid), 0);
    /* its unconsumed bytes went back to the connection window: a new stream flows */
    s.consume = 1;
    int32_t sid2 = cli_req(&c, nv, 4, body, sizeof(body), 0);
    pump(&c, &s);
    assert_true(sfind(&s, sid2)->ended);
    cli_free(&c);
    srv_free(&s);
}

/* The response ends before the request: the request goes on (an owner may still relay it);
 * once the owner discards it, the rest is consumed here and the client ends its stream without
 * a reset (clients such as curl 7.88 take a RST_STREAM after the answer for a failure). */
/* A response head nghttp2 cannot send (a field over its header block limit) resets the stream
 * instead of leaving it without an answer; the owner hears it. */
static void test_px_h2_response_head_too_big(void **state)
{
    (void)state;
    srv_t s;
    cli_t c;
    srv_init(&s);
    cli_init(&c, 0, 0);
    int32_t sid = cli_get(&c, "/big");
    pump(&c, &s);
    static char big[100000];
    memset(big, 'v', sizeof(big));
    px_h2_field_t f[] = {{"x-big", 5, big, sizeof(big)}};
    assert_int_equal(px_h2_respond(s.h, sid, 200, f, 1, 0), 0);
    pump(&c, &s);
    assert_true(c.st[sid / 2].closed);
    assert_int_equal(c.st[sid / 2].code, NGHTTP2_INTERNAL_ERROR);
    cli_free(&c);
    srv_free(&s);
}

static void test_px_h2_early_response(void **state)
{
    srv_t s;
    cli_t c;
    srv_init(&s);
    cli_init(&c, 0, 0);
    s.consume = 0;
    static char body[200000];
    nghttp2_nv nv[] = {NV(":method", "POST"), NV(":scheme", "https"), NV(":authority", "h.test"),
                       NV(":path", "/blocked")};
    int32_t sid = cli_req(&c, nv, 4, body, sizeof(body), 0);
    pump(&c, &s);
    px_h2_field_t f[] = {{"content-type", 12, "application/json", 16}};
    assert_int_equal(px_h2_respond(s.h, sid, 403, f, 1, 1), 0);
    assert_int_equal(px_h2_send_data(s.h, sid, "{}", 2), 0);
    assert_int_equal(px_h2_end(s.h, sid, NULL), 0);
    pump(&c, &s);
    assert_int_equal(c.st[sid / 2].status, 403);
    assert_false(c.st[sid / 2].closed); /* the body is still on its way: not cut */
    px_h2_discard(s.h, sid);
    pump(&c, &s);
    assert_true(c.st[sid / 2].closed);
    assert_int_equal(c.st[sid / 2].code, NGHTTP2_NO_ERROR);
    assert_false(s.req[0].reset);              /* no callback after the discard */
    assert_true(s.req[0].blen < sizeof(body)); /* the rest never reached the owner */
    cli_free(&c);
    srv_free(&s);
}

/* Streams opened and cancelled in a loop: GOAWAY ENHANCE_YOUR_CALM after PX_H2_RESET_MAX. */
static void test_px_h2_rapid_reset(void **state)
{
    srv_t s;
    cli_t c;
    srv_init(&s);
    cli_init(&c, 0, 0);
    int i;
    for (i = 0; i < 200 && !c.goaway; i++) {
        int32_t sid = cli_get(&c, "/x");
        const uint8_t *p;
        ssize_t n;
        while ((n = nghttp2_session_mem_send(c.ses, &p)) > 0)
            if (px_h2_feed(s.h, (const char *)p, (size_t)n) != 0 && s.feed_err == 0)
                s.feed_err = PX_EPARSE;
        nghttp2_submit_rst_stream(c.ses, NGHTTP2_FLAG_NONE, sid, NGHTTP2_CANCEL);
        pump(&c, &s);
    }
    assert_true(c.goaway);
    assert_int_equal(c.goaway_code, NGHTTP2_ENHANCE_YOUR_CALM);
    assert_int_equal(s.feed_err, PX_EPARSE);
    assert_int_equal(i, PX_H2_RESET_MAX + 1);
    assert_non_null(strstr(px_h2_reason(s.h), "rapid reset"));
    assert_true(px_h2_done(s.h));
    cli_free(&c);
    srv_free(&s);
}

/* A client that cancels some streams but not most of them is served. */
static void test_px_h2_some_resets(void **state)
{
    srv_t s;
    cli_t c;
    srv_init(&s);
    cli_init(&c, 0, 0);
    s.answer = 1;
    for (int i = 0; i < 400; i++) {
        int32_t sid = cli_get(&c, "/x");
        if (i % 3 == 0) {
            const uint8_t *p;
            ssize_t n;
            while ((n = nghttp2_session_mem_send(c.ses, &p)) > 0)
                px_h2_feed(s.h, (const char *)p, (size_t)n);
            nghttp2_submit_rst_stream(c.ses, NGHTTP2_FLAG_NONE, sid, NGHTTP2_CANCEL);
            s.answer = 0;
        }
        pump(&c, &s);
        s.answer = 1;
    }
    assert_false(c.goaway);
    assert_int_equal(s.feed_err, 0);
    cli_free(&c);
    srv_free(&s);
}

static void test_px_h2_header_list_too_big(void **state)
{
    srv_t s;
    cli_t c;
    srv_init(&s);
    cli_init(&c, 0, 1024 * 1024);
    static char big[8000];
    memset(big, 'v', sizeof(big) - 1);
    nghttp2_nv nv[16] = {NV(":method", "GET"), NV(":scheme", "https"), NV(":authority", "h.test"),
                         NV(":path", "/")};
    for (int i = 4; i < 14; i++)
        nv[i] = (nghttp2_nv){(uint8_t *)"x-big", (uint8_t *)big, 5, sizeof(big) - 1,
                             NGHTTP2_NV_FLAG_NO_INDEX};
    int32_t sid = cli_req(&c, nv, 14, NULL, 0, 0);
    pump(&c, &s);
    assert_int_equal(s.nreq, 0);
    assert_int_equal(s.refused, 1);
    assert_int_equal(s.refused_status, 431);
    assert_int_equal(c.st[sid / 2].status, 431);
    assert_true(c.st[sid / 2].closed);
    /* more fields than a head holds: 431 too */
    nghttp2_nv many[120];
    memcpy(many, nv, 4 * sizeof(nv[0]));
    for (int i = 4; i < 120; i++)
        many[i] = (nghttp2_nv)NV("x-f", "1");
    sid = cli_req(&c, many, 120, NULL, 0, 0);
    pump(&c, &s);
    assert_int_equal(c.st[sid / 2].status, 431);
    assert_int_equal(s.refused, 2);
    assert_int_equal(px_h2_heads_held(s.h), 0);
    /* the connection goes on */
    s.answer = 1;
    sid = cli_get(&c, "/fine");
    pump(&c, &s);
    assert_int_equal(c.st[sid / 2].status, 200);
    assert_false(c.goaway);
    cli_free(&c);
    srv_free(&s);
}

/* HPACK bomb: one 4000-byte table entry referenced by one byte each, thousands of times. The
 * decoded list passes PX_H2_HEADER_LIST_MAX after a few: a 431, nothing more is kept, the
 * connection goes on. */
static void test_px_h2_hpack_bomb(void **state)
{
    srv_t s;
    srv_init(&s);
    static uint8_t b[20000], p[16384];
    size_t n = preface(b), k = 0;
    const uint8_t head[] = {0x82, 0x87, 0x84, 0x41, 0x06, 'h', '.', 't', 'e', 's', 't'};
    memcpy(p, head, sizeof(head));
    k = sizeof(head);
    /* literal with incremental indexing, new name "x-b", value 4000 bytes (7-bit prefix int) */
    const uint8_t lit[] = {
        0x40, 0x03, 'x', '-', 'b', 0x7f, (4000 - 127) % 128 + 128, (4000 - 127) / 128};
    memcpy(p + k, lit, sizeof(lit));
    k += sizeof(lit);
    memset(p + k, 'v', 4000);
    k += 4000;
    while (k < sizeof(p))
        p[k++] = 0xbe; /* indexed: dynamic entry 62, the one just added */
    n += frame(b + n, 1, 0x4 | 0x1, 1, p, k);
    assert_int_equal(px_h2_feed(s.h, (const char *)b, n), 0);
    assert_int_equal(s.nreq, 0);
    assert_int_equal(s.refused_status, 431);
    assert_int_equal(px_h2_heads_held(s.h), 0); /* nothing of the refused head stays */
    assert_int_equal(drain_goaway(&s), -1);
    srv_free(&s);
}

static void test_px_h2_continuation_flood(void **state)
{
    srv_t s;
    srv_init(&s);
    static uint8_t b[4096];
    size_t n = preface(b);
    const uint8_t head[] = {0x82, 0x87, 0x84, 0x41, 0x06, 'h', '.', 't', 'e', 's', 't'};
    n += frame(b + n, 1, 0, 1, head, sizeof(head)); /* HEADERS without END_HEADERS */
    const uint8_t more[] = {0x00, 0x03, 'x', '-', 'a', 0x01, 'b'};
    for (int i = 0; i < 20; i++)
        n += frame(b + n, 9, 0, 1, more, sizeof(more));
    assert_int_equal(px_h2_feed(s.h, (const char *)b, n), PX_EPARSE);
    assert_int_equal(s.nreq, 0);
    long code = drain_goaway(&s);
    assert_int_equal(code, NGHTTP2_ENHANCE_YOUR_CALM);
    assert_true(px_h2_done(s.h));
    srv_free(&s);
}

/* PINGs (then SETTINGS) from a client that never reads: the codec holds at most PX_H2_OUT_MAX of
 * output plus PX_H2_MAX_OUTBOUND_ACK acks, then ends the connection. */
static void flood(uint8_t type, size_t payload)
{
    srv_t s;
    srv_init(&s);
    static uint8_t b[1 << 16];
    size_t n = preface(b);
    assert_int_equal(px_h2_feed(s.h, (const char *)b, n), 0);
    uint8_t p[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    int rc = 0, i;
    for (i = 0; i < 100000 && rc == 0; i++) {
        n = frame(b, type, 0, 0, p, payload);
        rc = px_h2_feed(s.h, (const char *)b, n);
    }
    assert_int_equal(rc, PX_EPARSE);
    assert_true(i < 100000);
    assert_non_null(strstr(px_h2_reason(s.h), "flood"));
    assert_int_equal(drain_goaway(&s), NGHTTP2_ENHANCE_YOUR_CALM);
    assert_true(s.max_out <= PX_H2_OUT_MAX + 17 * PX_H2_MAX_OUTBOUND_ACK + 100);
    srv_free(&s);
}

static void test_px_h2_ping_flood(void **state)
{
    flood(6, 8);
}

static void test_px_h2_settings_flood(void **state)
{
    flood(4, 0);
}

static void test_px_h2_too_many_settings(void **state)
{
    srv_t s;
    srv_init(&s);
    static uint8_t b[4096];
    size_t n = preface(b);
    uint8_t iv[6 * 40];
    for (int i = 0; i < 40; i++) {
        uint8_t e[6] = {0, 4, 0, 0, 0xff, 0xff}; /* INITIAL_WINDOW_SIZE 65535 */
        memcpy(iv + 6 * i, e, 6);
    }
    n += frame(b + n, 4, 0, 0, iv, sizeof(iv));
    assert_int_equal(px_h2_feed(s.h, (const char *)b, n), PX_EPARSE);
    assert_int_equal(drain_goaway(&s), NGHTTP2_ENHANCE_YOUR_CALM);
    srv_free(&s);
}

static void test_px_h2_too_many_streams(void **state)
{
    srv_t s;
    cli_t c;
    srv_init(&s);
    cli_init(&c, 1000, 0);
    int32_t id[130];
    for (int i = 0; i < 130; i++)
        id[i] = cli_get(&c, "/n");
    pump(&c, &s);
    assert_int_equal(s.nreq, PX_H2_MAX_STREAMS);
    int refused = 0;
    for (int i = 0; i < 130; i++)
        if (c.st[id[i] / 2].closed && c.st[id[i] / 2].code == NGHTTP2_REFUSED_STREAM)
            refused++;
    assert_int_equal(refused, 30);
    assert_false(c.goaway);
    cli_free(&c);
    srv_free(&s);
}

/* Malformed requests: nghttp2 resets the stream (PROTOCOL_ERROR); nothing is handed out. */
static void test_px_h2_malformed(void **state)
{
    srv_t s;
    cli_t c;
    srv_init(&s);
    cli_init(&c, 0, 0);
    nghttp2_nv nopath[] = {NV(":method", "GET"), NV(":scheme", "https"), NV(":authority", "h")};
    nghttp2_nv upper[] = {
        NV(":method", "GET"),
        NV(":scheme", "https"),
        NV(":authority", "h"),
        NV(":path", "/"),
        {(uint8_t *)"X-Upper", (uint8_t *)"1", 7, 1, NGHTTP2_NV_FLAG_NO_COPY_NAME}};
    nghttp2_nv space[] = {NV(":method", "GET"), NV(":scheme", "https"), NV(":authority", "h"),
                          NV(":path", "/"), NV("x bad", "1")};
    nghttp2_nv conn[] = {NV(":method", "GET"), NV(":scheme", "https"), NV(":authority", "h"),
                         NV(":path", "/"), NV("connection", "close")};
    nghttp2_nv crlf[] = {NV(":method", "GET"), NV(":scheme", "https"), NV(":authority", "h"),
                         NV(":path", "/"), NV("x-a", "1\r\nx-b: 2")};
    nghttp2_nv noauth[] = {NV(":method", "GET"), NV(":scheme", "https"), NV(":path", "/")};
    nghttp2_nv proto[] = {NV(":method", "GET"), NV(":scheme", "https"), NV(":authority", "h"),
                          NV(":path", "/"), NV(":protocol", "websocket")};
    const nghttp2_nv *cases[] = {nopath, upper, space, conn, crlf, noauth, proto};
    size_t ns[] = {3, 5, 5, 5, 5, 3, 5};
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        int32_t sid = cli_req(&c, cases[k], ns[k], NULL, 0, 0);
        pump(&c, &s);
        assert_int_equal(s.nreq, 0);
        assert_true(c.st[sid / 2].closed);
        assert_int_not_equal(c.st[sid / 2].code, 0);
        assert_int_equal(c.st[sid / 2].status, 0);
    }
    /* an unknown method: 400 from the codec */
    nghttp2_nv foo[] = {NV(":method", "FOO"), NV(":scheme", "https"), NV(":authority", "h"),
                        NV(":path", "/")};
    int32_t sid = cli_req(&c, foo, 4, NULL, 0, 0);
    pump(&c, &s);
    assert_int_equal(c.st[sid / 2].status, 400);
    assert_int_equal(s.refused_status, 400);
    /* a scheme other than http(s): 400 too (its :path would not be checked as a path) */
    nghttp2_nv ftp[] = {NV(":method", "GET"), NV(":scheme", "ftp"), NV(":authority", "h"),
                        NV(":path", "http://other.example/")};
    sid = cli_req(&c, ftp, 4, NULL, 0, 0);
    pump(&c, &s);
    assert_int_equal(c.st[sid / 2].status, 400);
    assert_int_equal(s.refused, 2);
    assert_int_equal(s.nreq, 0);
    assert_false(c.goaway);
    cli_free(&c);
    srv_free(&s);
}

/* Host and :authority both present: the same host keeps one Host field; different hosts keep
 * both, and the pre-checks refuse the duplicate Host. */
static void test_px_h2_host_authority(void **state)
{
    srv_t s;
    cli_t c;
    srv_init(&s);
    cli_init(&c, 0, 0);
    nghttp2_nv same[] = {NV(":method", "GET"), NV(":scheme", "https"),
                         NV(":authority", "a.example"), NV(":path", "/"), NV("host", "A.example")};
    nghttp2_nv diff[] = {NV(":method", "GET"), NV(":scheme", "https"),
                         NV(":authority", "a.example"), NV(":path", "/"), NV("host", "b.example")};
    nghttp2_nv hostonly[] = {NV(":method", "GET"), NV(":scheme", "https"), NV(":path", "/"),
                             NV("host", "b.example")};
    cli_req(&c, same, 5, NULL, 0, 0);
    cli_req(&c, diff, 5, NULL, 0, 0);
    cli_req(&c, hostonly, 4, NULL, 0, 0);
    pump(&c, &s);
    assert_int_equal(s.nreq, 3);
    px_pre_ctx_t ctx = {.kind = PX_LISTEN_HTTPS, .tls = 1, .sni = "a.example", .tunnel = ""};
    px_pre_t pre;
    char v[64];

    assert_int_equal(field_count(s.req[0].m, "host"), 1);
    assert_int_equal(s.req[0].rq.host_conflict, 0);
    px_precheck(s.req[0].m, &ctx, &pre);
    assert_int_equal(pre.verdict, PX_PRE_OK);

    assert_int_equal(field_count(s.req[1].m, "host"), 2);
    assert_int_equal(s.req[1].rq.host_conflict, 1);
    px_precheck(s.req[1].m, &ctx, &pre);
    assert_int_equal(pre.verdict, PX_PRE_BAD);
    assert_int_equal(pre.status, 400);

    assert_int_equal(s.req[2].rq.authority.len, 0);
    assert_string_equal(field(s.req[2].m, "host", v, sizeof(v)), "b.example");
    px_precheck(s.req[2].m, &ctx, &pre);
    assert_int_equal(pre.verdict, PX_PRE_MISMATCH); /* Host vs SNI, as for HTTP/1 */
    cli_free(&c);
    srv_free(&s);
}

static void test_px_h2_connect(void **state)
{
    srv_t s;
    cli_t c;
    srv_init(&s);
    cli_init(&c, 0, 0);
    pump(&c, &s); /* the server's SETTINGS (extended CONNECT on) reach the client */
    nghttp2_nv plain[] = {NV(":method", "CONNECT"), NV(":authority", "example.com:443")};
    nghttp2_nv ext[] = {NV(":method", "CONNECT"), NV(":protocol", "websocket"),
                        NV(":scheme", "https"),   NV(":authority", "example.com"),
                        NV(":path", "/chat"),     NV("sec-websocket-version", "13")};
    cli_req(&c, plain, 2, NULL, 0, 0);
    cli_req(&c, ext, 6, NULL, 0, 0);
    pump(&c, &s);
    assert_int_equal(s.nreq, 2);
    px_msg_t *m = s.req[0].m;
    assert_int_equal(m->method, HTTP_CONNECT);
    assert_true(m->flags & PX_MSG_UPGRADE);
    assert_true(span_is(m, m->target, "example.com:443"));
    assert_int_equal(s.req[0].rq.protocol.len, 0);
    px_pre_ctx_t ctx = {.kind = PX_LISTEN_HTTPS, .tls = 1, .sni = "example.com", .tunnel = ""};
    px_pre_t pre;
    px_precheck(m, &ctx, &pre);
    assert_int_equal(pre.verdict, PX_PRE_NO_TUNNEL);

    m = s.req[1].m;
    assert_int_equal(m->method, HTTP_CONNECT);
    assert_true(span_is(m, m->target, "/chat"));
    assert_true(span_is(m, s.req[1].rq.protocol, "websocket"));
    assert_int_equal(field_count(m, "host"), 1);
    cli_free(&c);
    srv_free(&s);
}

static void test_px_h2_trailers_too_big(void **state)
{
    srv_t s;
    cli_t c;
    srv_init(&s);
    cli_init(&c, 0, 1024 * 1024);
    pump(&c, &s);
    nghttp2_nv nv[] = {NV(":method", "POST"), NV(":scheme", "https"), NV(":authority", "h"),
                       NV(":path", "/")};
    int32_t sid = nghttp2_submit_headers(c.ses, NGHTTP2_FLAG_NONE, -1, NULL, nv, 4, NULL);
    assert_true(sid > 0);
    static char big[20000];
    memset(big, 't', sizeof(big) - 1);
    nghttp2_nv tr[] = {{(uint8_t *)"x-t", (uint8_t *)big, 3, sizeof(big) - 1, 0}};
    /* HEADERS without END_STREAM came with the request; now the trailers */
    pump(&c, &s);
    assert_int_equal(s.nreq, 1);
    assert_int_equal(nghttp2_submit_trailer(c.ses, sid, tr, 1), 0);
    pump(&c, &s);
    assert_true(s.req[0].reset);
    assert_int_equal(s.req[0].code, NGHTTP2_ENHANCE_YOUR_CALM);
    assert_false(s.req[0].ended);
    cli_free(&c);
    srv_free(&s);
}

static void test_px_h2_bad_preface(void **state)
{
    srv_t s;
    srv_init(&s);
    const char *h1 = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
    assert_int_equal(px_h2_feed(s.h, h1, strlen(h1)), PX_EPARSE);
    assert_non_null(strstr(px_h2_reason(s.h), "preface"));
    srv_free(&s);
}

/* ---- decoded header bytes held (PX_H2_*_HEADS_MAX) ---- */

/* A GET whose header list decodes to about 63 KB: 16 fields of 3,900 bytes (sent unindexed: the
 * memory on the server side is what counts, not the wire). */
static int32_t cli_big(cli_t *c, const char *path)
{
    static char big[3901];
    memset(big, 'A', sizeof(big) - 1);
    nghttp2_nv nv[20] = {NV(":method", "GET"),
                         NV(":scheme", "https"),
                         NV(":authority", "h.test"),
                         {(uint8_t *)":path", (uint8_t *)path, 5, strlen(path), 0}};
    for (int i = 4; i < 20; i++)
        nv[i] = (nghttp2_nv){(uint8_t *)"x-big", (uint8_t *)big, 5, sizeof(big) - 1,
                             NGHTTP2_NV_FLAG_NO_INDEX};
    return cli_req(c, nv, 20, NULL, 0, 0);
}

/* What cli_big(path) counts: name + value + 32 a field. */
static size_t big_size(const char *path)
{
    return (7 + 3 + 32) + (7 + 5 + 32) + (10 + 6 + 32) + (5 + strlen(path) + 32) +
           16 * (5 + 3900 + 32);
}

/* Past PX_H2_CONN_HEADS_MAX a stream is reset with ENHANCE_YOUR_CALM (and logged as a 431), the
 * connection goes on; every way a stream ends gives its bytes back. */
static void test_px_h2_heads_conn_bound(void **state)
{
    srv_t s;
    cli_t c;
    srv_init(&s);
    cli_init(&c, 0, 1024 * 1024);
    const size_t one = big_size("/h");
    const size_t fit = PX_H2_CONN_HEADS_MAX / one; /* 16 */
    assert_true(fit >= 2 && fit + 4 < PX_H2_MAX_STREAMS);
    int32_t sids[40];
    for (size_t i = 0; i < fit + 4; i++)
        sids[i] = cli_big(&c, "/h");
    pump(&c, &s);
    assert_int_equal(s.nreq, fit);
    assert_int_equal(px_h2_heads_held(s.h), fit * one);
    assert_int_equal(s.refused, 4);
    assert_int_equal(s.refused_status, 431);
    assert_non_null(strstr(s.refused_reason, "ENHANCE_YOUR_CALM"));
    for (size_t i = fit; i < fit + 4; i++) {
        assert_true(c.st[sids[i] / 2].closed);
        assert_int_equal(c.st[sids[i] / 2].code, NGHTTP2_ENHANCE_YOUR_CALM);
        assert_int_equal(c.st[sids[i] / 2].status, 0);
    }
    assert_false(c.goaway);
    assert_int_equal(s.feed_err, 0);
    /* the response ends the stream: its bytes go back, a new stream fits */
    assert_int_equal(px_h2_respond(s.h, sids[0], 200, NULL, 0, 0), 0);
    pump(&c, &s);
    assert_int_equal(px_h2_heads_held(s.h), (fit - 1) * one);
    sids[fit + 4] = cli_big(&c, "/h");
    pump(&c, &s);
    assert_int_equal(s.nreq, fit + 1);
    assert_int_equal(px_h2_heads_held(s.h), fit * one);
    /* the client resets one */
    nghttp2_submit_rst_stream(c.ses, NGHTTP2_FLAG_NONE, sids[1], NGHTTP2_CANCEL);
    pump(&c, &s);
    assert_true(sfind(&s, sids[1])->reset);
    assert_int_equal(px_h2_heads_held(s.h), (fit - 1) * one);
    /* the owner discards one (its answer still going out): no longer held at once */
    assert_int_equal(px_h2_respond(s.h, sids[2], 200, NULL, 0, 1), 0);
    px_h2_discard(s.h, sids[2]);
    assert_int_equal(px_h2_heads_held(s.h), (fit - 2) * one);
    /* the owner resets one: given back when the stream closes */
    px_h2_reset(s.h, sids[3], PX_H2_INTERNAL_ERROR);
    pump(&c, &s);
    assert_int_equal(px_h2_heads_held(s.h), (fit - 3) * one);
    cli_free(&c);
    srv_free(&s);
}

/* Counters shared by sessions (a sandbox's, the process's): past one, REFUSED_STREAM with that
 * counter's reason; unshare and free give back exactly what each session held. */
static void test_px_h2_heads_shared(void **state)
{
    const size_t one = big_size("/h");
    size_t proc = 0, sb = 0;
    const px_h2_share_t a_sh[] = {{&proc, 3 * one, "process busy"}};
    const px_h2_share_t b_sh[] = {{&proc, 3 * one, "process busy"}, {&sb, 2 * one, "sandbox busy"}};
    srv_t a, b;
    cli_t ca, cb;
    srv_init(&a);
    srv_init(&b);
    px_h2_share(a.h, a_sh, 1);
    px_h2_share(b.h, b_sh, 2);
    cli_init(&ca, 0, 1024 * 1024);
    cli_init(&cb, 0, 1024 * 1024);
    /* B: 2 fit its sandbox, the third is refused for the sandbox */
    cli_big(&cb, "/h");
    cli_big(&cb, "/h");
    int32_t r = cli_big(&cb, "/h");
    pump(&cb, &b);
    assert_int_equal(b.nreq, 2);
    assert_int_equal(b.refused_status, 503);
    assert_string_equal(b.refused_reason, "sandbox busy");
    assert_int_equal(cb.st[r / 2].code, NGHTTP2_REFUSED_STREAM);
    assert_int_equal(proc, 2 * one);
    assert_int_equal(sb, 2 * one);
    /* A: one fits the process, the second is refused for the process */
    cli_big(&ca, "/h");
    r = cli_big(&ca, "/h");
    pump(&ca, &a);
    assert_int_equal(a.nreq, 1);
    assert_string_equal(a.refused_reason, "process busy");
    assert_int_equal(ca.st[r / 2].code, NGHTTP2_REFUSED_STREAM);
    assert_int_equal(proc, 3 * one);
    assert_false(ca.goaway || cb.goaway);
    /* A lets go of the counter (its connection closing): what it held goes back once */
    px_h2_unshare(a.h);
    px_h2_unshare(a.h);
    assert_int_equal(proc, 2 * one);
    assert_int_equal(px_h2_heads_held(a.h), one);
    srv_free(&a);
    assert_int_equal(proc, 2 * one);
    /* B freed with its streams open: they give back too */
    srv_free(&b);
    assert_int_equal(proc, 0);
    assert_int_equal(sb, 0);
    cli_free(&ca);
    cli_free(&cb);
}

/* A connection that goes on opening streams past a bound: after PX_H2_HEADS_REFUSED_MAX
 * refusals, GOAWAY ENHANCE_YOUR_CALM. */
static void test_px_h2_heads_goaway(void **state)
{
    size_t proc = 0;
    const px_h2_share_t sh[] = {{&proc, 100, "process busy"}}; /* no head fits */
    srv_t s;
    cli_t c;
    srv_init(&s);
    px_h2_share(s.h, sh, 1);
    cli_init(&c, 0, 0);
    int32_t sids[PX_H2_HEADS_REFUSED_MAX + 2];
    for (int i = 0; i < PX_H2_HEADS_REFUSED_MAX + 2; i++)
        sids[i] = cli_get(&c, "/x");
    pump(&c, &s);
    assert_int_equal(s.nreq, 0);
    assert_int_equal(s.refused, PX_H2_HEADS_REFUSED_MAX + 1);
    for (int i = 0; i < PX_H2_HEADS_REFUSED_MAX; i++)
        assert_int_equal(c.st[sids[i] / 2].code, NGHTTP2_REFUSED_STREAM);
    assert_true(c.goaway);
    assert_int_equal(c.goaway_code, NGHTTP2_ENHANCE_YOUR_CALM);
    assert_int_equal(s.feed_err, PX_EPARSE);
    assert_non_null(strstr(px_h2_reason(s.h), "too many streams refused"));
    assert_int_equal(proc, 0);
    cli_free(&c);
    srv_free(&s);
}

/* The owner resets a stream: no callback follows, later calls are refused. */
static void test_px_h2_owner_reset(void **state)
{
    srv_t s;
    cli_t c;
    srv_init(&s);
    cli_init(&c, 0, 0);
    int32_t sid = cli_get(&c, "/r");
    pump(&c, &s);
    assert_int_equal(px_h2_respond(s.h, sid, 200, NULL, 0, 1), 0);
    assert_int_equal(px_h2_send_data(s.h, sid, "abc", 3), 0);
    px_h2_reset(s.h, sid, PX_H2_INTERNAL_ERROR);
    assert_int_equal(px_h2_send_data(s.h, sid, "abc", 3), PX_ESTATE);
    pump(&c, &s);
    assert_true(c.st[sid / 2].closed);
    assert_int_equal(c.st[sid / 2].code, NGHTTP2_INTERNAL_ERROR);
    assert_int_equal(s.req[0].reset, 0);
    px_h2_reset(s.h, sid, PX_H2_INTERNAL_ERROR); /* gone: ignored */
    px_h2_consume(s.h, sid, 10);
    cli_free(&c);
    srv_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_px_h2_get),
        cmocka_unit_test(test_px_h2_idle_memory),
        cmocka_unit_test(test_px_h2_idle_trim),
        cmocka_unit_test(test_px_h2_output_kept),
        cmocka_unit_test(test_px_h2_post_trailers),
        cmocka_unit_test(test_px_h2_interim_and_empty_body),
        cmocka_unit_test(test_px_h2_out_of_order),
        cmocka_unit_test(test_px_h2_stalled_stream),
        cmocka_unit_test(test_px_h2_request_window),
        cmocka_unit_test(test_px_h2_client_reset),
        cmocka_unit_test(test_px_h2_early_response),
        cmocka_unit_test(test_px_h2_response_head_too_big),
        cmocka_unit_test(test_px_h2_rapid_reset),
        cmocka_unit_test(test_px_h2_some_resets),
        cmocka_unit_test(test_px_h2_header_list_too_big),
        cmocka_unit_test(test_px_h2_hpack_bomb),
        cmocka_unit_test(test_px_h2_continuation_flood),
        cmocka_unit_test(test_px_h2_ping_flood),
        cmocka_unit_test(test_px_h2_settings_flood),
        cmocka_unit_test(test_px_h2_too_many_settings),
        cmocka_unit_test(test_px_h2_too_many_streams),
        cmocka_unit_test(test_px_h2_malformed),
        cmocka_unit_test(test_px_h2_host_authority),
        cmocka_unit_test(test_px_h2_connect),
        cmocka_unit_test(test_px_h2_trailers_too_big),
        cmocka_unit_test(test_px_h2_bad_preface),
        cmocka_unit_test(test_px_h2_owner_reset),
        cmocka_unit_test(test_px_h2_heads_conn_bound),
        cmocka_unit_test(test_px_h2_heads_shared),
        cmocka_unit_test(test_px_h2_heads_goaway),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
