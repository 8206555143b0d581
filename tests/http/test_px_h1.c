/* The HTTP/1 codec (px_h1.c), table-driven: each case is fed whole, split at every byte boundary
 * into two reads, and one byte at a time, and must read the same each way: heads, body bytes,
 * trailer fields, ends, errors. Requests and responses (interim heads, HEAD, the close). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/px_err.h"
#include "http/px_h1.h"

/* What a parse produced, as text: "H<status or method> <target> n=<fields>;" per head,
 * "D<bytes>;" per run of body bytes (merged), "T<name>=<value>," per trailer, "E;" per end,
 * "X<reason>;" for an error. */
typedef struct trace {
    char s[8192];
    size_t len;
    int in_data;
    size_t data;
} trace_t;

static void tr_add(trace_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tr_add(trace_t *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->s + t->len, sizeof(t->s) - t->len, fmt, ap);
    va_end(ap);
    if (n > 0 && t->len + (size_t)n < sizeof(t->s))
        t->len += (size_t)n;
}

static void tr_flush(trace_t *t)
{
    if (t->in_data) {
        tr_add(t, "D%zu;", t->data);
        t->in_data = 0;
        t->data = 0;
    }
}

static int on_head(void *owner, px_msg_t *m)
{
    trace_t *t = owner;
    tr_flush(t);
    if (m->is_request)
        tr_add(t, "H%d %.*s n=%zu%s;", m->method, (int)m->target.len, m->buf + m->target.off, m->n,
               (m->flags & PX_MSG_CHUNKED) ? " chunked" : "");
    else
        tr_add(t, "H%d n=%zu%s%s;", m->status, m->n, (m->flags & PX_MSG_NO_BODY) ? " nobody" : "",
               (m->flags & PX_MSG_UNTIL_CLOSE) ? " close" : "");
    for (size_t i = 0; i < m->n; i++) {
        assert_true(m->names[i].off + m->names[i].len <= m->len);
        assert_true(m->values[i].off + m->values[i].len <= m->len);
    }
    px_msg_free(m);
    return 0;
}

static int on_data(void *owner, const char *data, size_t len)
{
    trace_t *t = owner;
    (void)data;
    t->in_data = 1;
    t->data += len;
    return 0;
}

static int on_end(void *owner, const px_fields_t *f)
{
    trace_t *t = owner;
    tr_flush(t);
    for (size_t i = 0; f != NULL && i < f->n; i++)
        tr_add(t, "T%.*s=%.*s,", (int)f->names[i].len, f->buf + f->names[i].off,
               (int)f->values[i].len, f->buf + f->values[i].off);
    tr_add(t, "E;");
    return 1;
}

static const px_h1_cbs_t trace_cbs = {on_head, on_data, on_end};

/* Feeds in as the pieces between cuts (a copy each), running every message: the next
 * message starts once one ends. Then the close (responses). */
static void run(int request, int head, const char *in, size_t len, const size_t *cuts, size_t ncuts,
                int finish, trace_t *t)
{
    memset(t, 0, sizeof(*t));
    px_h1_t p;
    px_h1_init(&p, request, &trace_cbs, t);
    if (head)
        px_h1_expect_no_body(&p);
    char *keep = NULL;
    size_t klen = 0;
    int failed = 0;
    for (size_t i = 0; i + 1 < ncuts && !failed; i++) {
        size_t n = cuts[i + 1] - cuts[i];
        char *buf = malloc(klen + n + 1);
        assert_non_null(buf);
        if (klen)
            memcpy(buf, keep, klen);
        memcpy(buf + klen, in + cuts[i], n);
        free(keep);
        keep = NULL;
        size_t total = klen + n, off = 0;
        klen = 0;
        while (off < total) {
            size_t used = 0;
            if (px_h1_feed(&p, buf + off, total - off, &used) < 0) {
                tr_flush(t);
                tr_add(t, "X%s;", p.reason);
                failed = 1;
                break;
            }
            off += used;
            if (p.state == PX_H1_DONE || p.state == PX_H1_UPGRADED) {
                if (p.state == PX_H1_UPGRADED)
                    tr_add(t, "U;");
                px_h1_next(&p);
                if (head)
                    px_h1_expect_no_body(&p);
            } else if (used == 0) {
                break;
            }
        }
        if (!failed && off < total) {
            keep = malloc(total - off);
            memcpy(keep, buf + off, total - off);
            klen = total - off;
        }
        free(buf);
    }
    if (!failed && finish && px_h1_finish(&p) != 0) {
        tr_flush(t);
        tr_add(t, "F;");
    }
    tr_flush(t);
    free(keep);
    px_h1_free(&p);
}

typedef struct h1_case {
    const char *name;
    int request;
    int head;   /* responses to HEAD */
    int finish; /* the connection closes after the input */
    const char *in;
    const char *want;
} h1_case_t;

#define CRLF "\r\n"

static const h1_case_t cases[] = {
    {"GET, no body", 1, 0, 0, "GET /a HTTP/1.1" CRLF "Host: x" CRLF CRLF, "H1 /a n=1;E;"},
    {"pipelined", 1, 0, 0,
     "GET /a HTTP/1.1" CRLF "Host: x" CRLF CRLF "GET /b HTTP/1.1" CRLF "Host: x" CRLF CRLF,
     "H1 /a n=1;E;H1 /b n=1;E;"},
    {"content-length body", 1, 0, 0,
     "POST /u HTTP/1.1" CRLF "Host: x" CRLF "Content-Length: 5" CRLF CRLF "hello",
     "H3 /u n=2;D5;E;"},
    {"chunked body with trailers", 1, 0, 0,
     "POST /u HTTP/1.1" CRLF "Host: x" CRLF "Transfer-Encoding: chunked" CRLF CRLF "3" CRLF
     "abc" CRLF "2;ext=1" CRLF "de" CRLF "0" CRLF "X-A: 1" CRLF
     "Server-Timing: db;dur=53" CRLF CRLF,
     "H3 /u n=2 chunked;D5;TX-A=1,TServer-Timing=db;dur=53,E;"},
    {"trailers, then a pipelined request", 1, 0, 0,
     "POST /u HTTP/1.1" CRLF "Host: x" CRLF "Transfer-Encoding: chunked" CRLF CRLF "0" CRLF
     "X: y" CRLF CRLF "GET /n HTTP/1.1" CRLF "Host: x" CRLF CRLF,
     "H3 /u n=2 chunked;TX=y,E;H1 /n n=1;E;"},
    {"value whitespace trimmed", 1, 0, 0, "GET / HTTP/1.1" CRLF "Host: x \t" CRLF CRLF,
     "H1 / n=1;E;"},
    {"bare LF refused", 1, 0, 0, "GET / HTTP/1.1\nHost: x" CRLF CRLF, "X"},
    {"obs-fold refused", 1, 0, 0, "GET / HTTP/1.1" CRLF "Host: x" CRLF " y" CRLF CRLF, "X"},
    {"CL and TE refused", 1, 0, 0,
     "POST / HTTP/1.1" CRLF "Host: x" CRLF "Content-Length: 3" CRLF
     "Transfer-Encoding: chunked" CRLF CRLF "0" CRLF CRLF,
     "X"},
    {"bad chunk size refused", 1, 0, 0,
     "POST / HTTP/1.1" CRLF "Host: x" CRLF "Transfer-Encoding: chunked" CRLF CRLF "zz" CRLF,
     "H3 / n=2 chunked;X"},
    {"HTTP/2 preface refused", 1, 0, 0, "PRI * HTTP/2.0" CRLF CRLF "SM" CRLF CRLF, "X"},
    {"CONNECT stops at its head", 1, 0, 0,
     "CONNECT a:443 HTTP/1.1" CRLF "Host: a:443" CRLF CRLF "\x16\x03\x01", "H5 a:443 n=1;E;X"},
    /* responses */
    {"response with length", 0, 0, 0, "HTTP/1.1 200 OK" CRLF "Content-Length: 2" CRLF CRLF "ok",
     "H200 n=1;D2;E;"},
    {"interim heads, then the final one", 0, 0, 0,
     "HTTP/1.1 100 Continue" CRLF CRLF "HTTP/1.1 103 Early Hints" CRLF "Link: </a>" CRLF CRLF
     "HTTP/1.1 200 OK" CRLF "Content-Length: 2" CRLF CRLF "ok",
     "H100 n=0 nobody;H103 n=1 nobody;H200 n=1;D2;E;"},
    {"chunked response with trailers", 0, 0, 0,
     "HTTP/1.1 200 OK" CRLF "Transfer-Encoding: chunked" CRLF CRLF "5" CRLF "hello" CRLF "0" CRLF
     "Server-Timing: db;dur=53" CRLF CRLF,
     "H200 n=1;D5;TServer-Timing=db;dur=53,E;"},
    {"response to HEAD", 0, 1, 0, "HTTP/1.1 200 OK" CRLF "Content-Length: 500" CRLF CRLF,
     "H200 n=1 nobody;E;"},
    {"response to HEAD after an interim head", 0, 1, 0,
     "HTTP/1.1 100 Continue" CRLF CRLF "HTTP/1.1 200 OK" CRLF "Content-Length: 500" CRLF CRLF,
     "H100 n=0 nobody;H200 n=1 nobody;E;"},
    {"204 and 304 have no body", 0, 0, 0,
     "HTTP/1.1 204 No Content" CRLF "Content-Length: 9" CRLF CRLF
     "HTTP/1.1 304 Not Modified" CRLF CRLF,
     "H204 n=1 nobody;E;H304 n=0 nobody;E;"},
    {"until the close", 0, 0, 1, "HTTP/1.1 200 OK" CRLF CRLF "all of it", "H200 n=0 close;D9;E;"},
    {"cut short", 0, 0, 1, "HTTP/1.1 200 OK" CRLF "Content-Length: 10" CRLF CRLF "abc",
     "H200 n=1;D3;F;"},
    {"101 upgrade", 0, 0, 0,
     "HTTP/1.1 101 Switching Protocols" CRLF "Upgrade: websocket" CRLF
     "Connection: Upgrade" CRLF CRLF "\x81\x05hello",
     "H101 n=2 nobody;E;X"}, /* the rest is the new protocol: not HTTP */
    {"status of two digits refused", 0, 0, 0, "HTTP/1.1 20 OK" CRLF CRLF, "X"},
};

/* The trace up to its first error marker: splits may have read a head more or less far before
 * the error, but never anything else differently. */
static void check(const h1_case_t *c, const trace_t *t, const char *how)
{
    const char *x = strchr(t->s, 'X');
    size_t want_len = strlen(c->want);
    if (want_len > 0 && c->want[want_len - 1] == 'X') {
        /* an error case: the same prefix, then an error */
        if (x == NULL || strncmp(t->s, c->want, want_len - 1) != 0)
            fail_msg("%s (%s): got [%s], want [%s...]", c->name, how, t->s, c->want);
        return;
    }
    if (strcmp(t->s, c->want) != 0)
        fail_msg("%s (%s): got [%s], want [%s]", c->name, how, t->s, c->want);
}

static void test_px_h1_cases_whole_and_split(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const h1_case_t *c = &cases[i];
        size_t len = strlen(c->in);
        trace_t t;
        size_t whole[2] = {0, len};
        run(c->request, c->head, c->in, len, whole, 2, c->finish, &t);
        check(c, &t, "whole");
        for (size_t k = 1; k < len; k++) {
            size_t two[3] = {0, k, len};
            run(c->request, c->head, c->in, len, two, 3, c->finish, &t);
            char how[32];
            snprintf(how, sizeof(how), "split at %zu", k);
            check(c, &t, how);
        }
        size_t *bytes = malloc((len + 1) * sizeof(size_t));
        for (size_t k = 0; k <= len; k++)
            bytes[k] = k;
        run(c->request, c->head, c->in, len, bytes, len + 1, c->finish, &t);
        check(c, &t, "byte by byte");
        free(bytes);
    }
}

/* The caps: head size, header count, trailer size and count, interim heads. */
static void test_px_h1_caps(void **state)
{
    (void)state;
    trace_t t;
    size_t cuts[2];
    char *big = malloc(PX_HEAD_MAX + 256);
    int n = snprintf(big, 64, "GET / HTTP/1.1" CRLF "X: ");
    memset(big + n, 'a', PX_HEAD_MAX);
    memcpy(big + n + PX_HEAD_MAX, CRLF CRLF, 5);
    cuts[0] = 0;
    cuts[1] = strlen(big);
    run(1, 0, big, cuts[1], cuts, 2, 0, &t);
    assert_string_equal(t.s, "Xmessage head too large;");
    char fields[8192];
    size_t o = (size_t)snprintf(fields, sizeof(fields), "GET / HTTP/1.1" CRLF);
    for (int i = 0; i <= PX_HEADERS_MAX; i++)
        o += (size_t)snprintf(fields + o, sizeof(fields) - o, "X%d: v" CRLF, i);
    o += (size_t)snprintf(fields + o, sizeof(fields) - o, CRLF);
    cuts[1] = o;
    run(1, 0, fields, o, cuts, 2, 0, &t);
    assert_string_equal(t.s, "Xtoo many header fields;");
    o = (size_t)snprintf(fields, sizeof(fields),
                         "POST / HTTP/1.1" CRLF "Transfer-Encoding: chunked" CRLF CRLF "0" CRLF);
    for (int i = 0; i <= PX_TRAILERS_MAX; i++)
        o += (size_t)snprintf(fields + o, sizeof(fields) - o, "T%d: v" CRLF, i);
    o += (size_t)snprintf(fields + o, sizeof(fields) - o, CRLF);
    cuts[1] = o;
    run(1, 0, fields, o, cuts, 2, 0, &t);
    assert_non_null(strstr(t.s, "Xtrailer section too large;"));
    o = (size_t)snprintf(
        big, 128, "POST / HTTP/1.1" CRLF "Transfer-Encoding: chunked" CRLF CRLF "0" CRLF "T: ");
    memset(big + o, 'b', PX_TRAILER_MAX);
    memcpy(big + o + PX_TRAILER_MAX, CRLF CRLF, 5);
    cuts[1] = o + PX_TRAILER_MAX + 4;
    run(1, 0, big, cuts[1], cuts, 2, 0, &t);
    assert_non_null(strstr(t.s, "Xtrailer section too large;"));
    o = 0;
    for (int i = 0; i <= PX_INTERIM_MAX; i++)
        o += (size_t)snprintf(big + o, 64, "HTTP/1.1 100 Continue" CRLF CRLF);
    o += (size_t)snprintf(big + o, 64, "HTTP/1.1 200 OK" CRLF "Content-Length: 0" CRLF CRLF);
    cuts[1] = o;
    run(0, 0, big, o, cuts, 2, 0, &t);
    assert_non_null(strstr(t.s, "Xtoo many interim (1xx) responses;"));
    free(big);
}

/* ---- the next message started from inside a callback ------------------------------------ */

/* The upstream client pools a connection when its response ends, and the owner's end callback
 * may send the next request at once: that request takes the same connection and starts its
 * parser (px_h1_next) while px_h1_feed is still inside llhttp for the old response. */
typedef struct reenter {
    px_h1_t p;
    trace_t t;
    int next_on_end;
} reenter_t;

static int re_head(void *owner, px_msg_t *m)
{
    reenter_t *r = owner;
    return on_head(&r->t, m);
}

static int re_data(void *owner, const char *data, size_t len)
{
    reenter_t *r = owner;
    return on_data(&r->t, data, len);
}

static int re_end(void *owner, const px_fields_t *f)
{
    reenter_t *r = owner;
    on_end(&r->t, f);
    if (r->next_on_end) {
        r->next_on_end = 0;
        px_h1_next(&r->p);
    }
    return 1;
}

static const px_h1_cbs_t re_cbs = {re_head, re_data, re_end};

static void test_px_h1_next_from_end_callback(void **state)
{
    (void)state;
    static const char *const first[] = {
        "HTTP/1.1 200 OK" CRLF "Content-Length: 2" CRLF CRLF "ok",
        "HTTP/1.1 200 OK" CRLF "Transfer-Encoding: chunked" CRLF CRLF "2" CRLF "ok" CRLF
        "0" CRLF CRLF,
        "HTTP/1.1 204 No Content" CRLF CRLF,
    };
    for (size_t i = 0; i < sizeof(first) / sizeof(first[0]); i++) {
        reenter_t *r = calloc(1, sizeof(*r));
        assert_non_null(r);
        px_h1_init(&r->p, 0, &re_cbs, r);
        r->next_on_end = 1;
        size_t used = 0, len = strlen(first[i]);
        assert_int_equal(px_h1_feed(&r->p, first[i], len, &used), 0);
        assert_int_equal(used, len);
        assert_int_equal(r->p.state, PX_H1_HEAD); /* the next message, not yet begun */
        const char *second = "HTTP/1.1 201 Created" CRLF "Content-Length: 3" CRLF CRLF "abc";
        len = strlen(second);
        assert_int_equal(px_h1_feed(&r->p, second, len, &used), 0);
        assert_int_equal(used, len);
        tr_flush(&r->t);
        const char *want[] = {"H200 n=1;D2;E;H201 n=1;D3;E;", "H200 n=1;D2;E;H201 n=1;D3;E;",
                              "H204 n=0 nobody;E;H201 n=1;D3;E;"};
        assert_string_equal(r->t.s, want[i]);
        px_h1_free(&r->p);
        free(r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_px_h1_cases_whole_and_split),
        cmocka_unit_test(test_px_h1_caps),
        cmocka_unit_test(test_px_h1_next_from_end_callback),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
