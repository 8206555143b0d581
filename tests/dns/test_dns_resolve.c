/* dns_resolve sharing one upstream lookup among the requests for a name: a fake upstream on
 * the test's loop counts every query it receives and answers, fails, stays silent or holds
 * the queries until the test releases them. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <uv.h>

#include "dns/dns_resolve.h"
#include "base/px_err.h"

#define QTYPE_A 1
#define QTYPE_AAAA 28
#define FAKE_LOG_MAX 1024
#define FAKE_HELD_MAX 64
#define FAKE_PKT_MAX 512

/* ---- the fake upstream ---- */

typedef enum fake_mode {
    FAKE_ANSWER, /* A 192.0.2.<length of the name>, AAAA 2001:db8::<length> */
    FAKE_SERVFAIL,
    FAKE_NXDOMAIN,
    FAKE_SILENT,
    FAKE_HOLD, /* keep queries until fake_release */
} fake_mode_t;

typedef struct fake_query {
    char name[DNS_RESOLVE_HOST_MAX + 1];
    int type;
} fake_query_t;

typedef struct fake_held {
    uint8_t pkt[FAKE_PKT_MAX];
    size_t len;
    struct sockaddr_storage from;
} fake_held_t;

typedef struct fake {
    uv_udp_t udp;
    fake_mode_t mode;
    unsigned queries; /* all, including those past the log */
    size_t nlog;
    fake_query_t log[FAKE_LOG_MAX];
    size_t nheld;
    fake_held_t held[FAKE_HELD_MAX];
    char text[64];
} fake_t;

static void on_fake_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    static char in[2048];

    (void)h;
    (void)suggested;
    *buf = uv_buf_init(in, sizeof(in));
}

/* Reads the question: name as dotted text, type. Returns the offset after it, or 0. */
static size_t fake_question(const uint8_t *p, size_t n, char *name, int *type)
{
    size_t off = 12;
    size_t out = 0;

    while (off < n && p[off] != 0) {
        size_t l = p[off];

        if (l > 63 || off + 1 + l >= n || out + l + 1 > DNS_RESOLVE_HOST_MAX)
            return 0;
        if (out > 0)
            name[out++] = '.';
        memcpy(name + out, p + off + 1, l);
        out += l;
        off += 1 + l;
    }
    name[out] = '\0';
    if (off + 5 > n)
        return 0;
    *type = (p[off + 1] << 8) | p[off + 2];
    return off + 5;
}

static void fake_answer(fake_t *fk, const uint8_t *q, size_t n, const struct sockaddr *to,
                        fake_mode_t mode)
{
    uint8_t out[FAKE_PKT_MAX + 64];
    char name[DNS_RESOLVE_HOST_MAX + 1];
    size_t len;
    int type;
    uv_buf_t b;

    len = fake_question(q, n, name, &type);
    if (len == 0 || len > FAKE_PKT_MAX)
        return;
    memcpy(out, q, len);
    out[2] = 0x81; /* QR, RD */
    out[3] = (uint8_t)(0x80 | (mode == FAKE_SERVFAIL ? 2 : mode == FAKE_NXDOMAIN ? 3 : 0));
    memset(out + 6, 0, 6); /* no answer, authority or additional (drops any OPT) */
    if (mode == FAKE_ANSWER && (type == QTYPE_A || type == QTYPE_AAAA)) {
        size_t rdlen = type == QTYPE_A ? 4 : 16;
        uint8_t rr[10] = {0xC0, 12, 0, (uint8_t)type, 0, 1, 0, 0, 0, 60};

        out[7] = 1;
        memcpy(out + len, rr, sizeof(rr));
        len += sizeof(rr);
        out[len++] = 0;
        out[len++] = (uint8_t)rdlen;
        if (type == QTYPE_A) {
            uint8_t a[4] = {192, 0, 2, (uint8_t)strlen(name)};

            memcpy(out + len, a, 4);
        } else {
            uint8_t a[16] = {0x20, 0x01, 0x0d, 0xb8};

            memset(a + 4, 0, 12);
            a[15] = (uint8_t)strlen(name);
            memcpy(out + len, a, 16);
        }
        len += rdlen;
    }
    b = uv_buf_init((char *)out, (unsigned)len);
    uv_udp_try_send(&fk->udp, &b, 1, to);
}

static void on_fake_recv(uv_udp_t *h, ssize_t nread, const uv_buf_t *buf,
                         const struct sockaddr *addr, unsigned flags)
{
    fake_t *fk = (fake_t *)h; /* udp is the first member */
    const uint8_t *p = (const uint8_t *)buf->base;
    size_t n = (size_t)nread;
    fake_query_t q;

    (void)flags;
    if (nread < 12 || addr == NULL || fake_question(p, n, q.name, &q.type) == 0)
        return;
    fk->queries++;
    if (fk->nlog < FAKE_LOG_MAX)
        fk->log[fk->nlog++] = q;
    if (fk->mode == FAKE_SILENT)
        return;
    if (fk->mode == FAKE_HOLD) {
        fake_held_t *hd;

        assert_true(fk->nheld < FAKE_HELD_MAX);
        assert_true(n <= FAKE_PKT_MAX);
        hd = &fk->held[fk->nheld++];
        memcpy(hd->pkt, p, n);
        hd->len = n;
        memcpy(&hd->from, addr,
               addr->sa_family == AF_INET ? sizeof(struct sockaddr_in)
                                          : sizeof(struct sockaddr_in6));
        return;
    }
    fake_answer(fk, p, n, addr, fk->mode);
}

/* Answers every held query as mode says (or drops them); new ones are then treated so too. */
static void fake_release(fake_t *fk, fake_mode_t mode)
{
    size_t i;

    fk->mode = mode;
    for (i = 0; i < fk->nheld && mode != FAKE_SILENT; i++)
        fake_answer(fk, fk->held[i].pkt, fk->held[i].len, (struct sockaddr *)&fk->held[i].from,
                    mode);
    fk->nheld = 0;
}

/* Queries received for name (any case) of type (0: any). */
static unsigned fake_count(const fake_t *fk, const char *name, int type)
{
    unsigned c = 0;
    size_t i;

    for (i = 0; i < fk->nlog; i++) {
        if (strcasecmp(fk->log[i].name, name) == 0 && (type == 0 || fk->log[i].type == type))
            c++;
    }
    return c;
}

static fake_t *fake_start(uv_loop_t *loop, fake_mode_t mode)
{
    fake_t *fk = calloc(1, sizeof(*fk));
    struct sockaddr_in sin;
    int len = sizeof(sin);
    char ip[32];

    assert_non_null(fk);
    fk->mode = mode;
    assert_int_equal(uv_udp_init(loop, &fk->udp), 0);
    uv_ip4_addr("127.0.0.1", 0, &sin);
    assert_int_equal(uv_udp_bind(&fk->udp, (struct sockaddr *)&sin, 0), 0);
    assert_int_equal(uv_udp_getsockname(&fk->udp, (struct sockaddr *)&sin, &len), 0);
    uv_ip4_name(&sin, ip, sizeof(ip));
    snprintf(fk->text, sizeof(fk->text), "%s:%u", ip, ntohs(sin.sin_port));
    assert_int_equal(uv_udp_recv_start(&fk->udp, on_fake_alloc, on_fake_recv), 0);
    return fk;
}

static void on_fake_closed(uv_handle_t *h)
{
    free(h);
}

static void fake_stop(fake_t *fk)
{
    uv_close((uv_handle_t *)&fk->udp, on_fake_closed);
}

/* ---- requests and the loop ---- */

typedef struct result {
    int fired;
    int status;
    size_t naddrs;
    struct sockaddr_storage addrs[DNS_RESOLVE_ADDRS_MAX];
    char err[128];
    double at; /* ms, when the callback fired */
} result_t;

static int in_resolve; /* set around dns_resolve: no callback may fire inside it */

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void on_resolved(int status, const struct sockaddr_storage *addrs, size_t naddrs,
                        const char *err, void *data)
{
    result_t *res = data;

    assert_false(in_resolve);
    res->fired++;
    res->at = now_ms();
    res->status = status;
    res->naddrs = naddrs;
    if (naddrs > 0)
        memcpy(res->addrs, addrs, naddrs * sizeof(addrs[0]));
    snprintf(res->err, sizeof(res->err), "%s", err != NULL ? err : "");
    if (status == 0)
        assert_null(err);
    else
        assert_non_null(err);
}

static int resolve(dns_resolver_t *r, const char *host, uint16_t port, result_t *res,
                   dns_resolve_req_t **req)
{
    int rc;

    memset(res, 0, sizeof(*res));
    in_resolve = 1;
    rc = dns_resolve(r, host, port, on_resolved, res, req);
    in_resolve = 0;
    assert_int_equal(res->fired, 0);
    return rc;
}

static void run_for(uv_loop_t *loop, double ms)
{
    double t0 = now_ms();

    while (now_ms() - t0 < ms) {
        uv_run(loop, UV_RUN_NOWAIT);
        usleep(1000);
    }
}

static int all_fired(const result_t *res, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (res[i].fired == 0)
            return 0;
    }
    return 1;
}

static void run_until_all(uv_loop_t *loop, const result_t *res, size_t n, double max_ms)
{
    double t0 = now_ms();

    while (!all_fired(res, n) && now_ms() - t0 < max_ms) {
        uv_run(loop, UV_RUN_NOWAIT);
        usleep(1000);
    }
}

static void on_resolver_closed(void *data)
{
    (*(int *)data)++;
}

static void close_resolver(uv_loop_t *loop, dns_resolver_t *r)
{
    int closed = 0;
    double t0 = now_ms();

    dns_resolver_close(r, on_resolver_closed, &closed);
    while (!closed && now_ms() - t0 < 5000) {
        uv_run(loop, UV_RUN_NOWAIT);
        usleep(1000);
    }
    assert_int_equal(closed, 1);
}

static void finish_loop(uv_loop_t *loop, fake_t *fk)
{
    fake_stop(fk);
    uv_run(loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(loop), 0);
}

/* The answer FAKE_ANSWER gives for a name of len characters, with port: IPv4 then IPv6. */
static void expect_answer(const result_t *res, size_t len, uint16_t port)
{
    const struct sockaddr_in *sin = (const struct sockaddr_in *)&res->addrs[0];
    const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&res->addrs[1];
    char want[64];
    char ip[64];

    assert_int_equal(res->fired, 1);
    assert_int_equal(res->status, 0);
    assert_int_equal(res->naddrs, 2);
    assert_int_equal(sin->sin_family, AF_INET);
    assert_int_equal(ntohs(sin->sin_port), port);
    uv_ip4_name(sin, ip, sizeof(ip));
    snprintf(want, sizeof(want), "192.0.2.%zu", len);
    assert_string_equal(ip, want);
    assert_int_equal(sin6->sin6_family, AF_INET6);
    assert_int_equal(ntohs(sin6->sin6_port), port);
    uv_ip6_name(sin6, ip, sizeof(ip));
    snprintf(want, sizeof(want), "2001:db8::%zx", len);
    assert_string_equal(ip, want);
}

/* ---- tests ---- */

#define BURST 200

/* 200 requests at once, in three spellings, reach the upstream as one A and one AAAA query;
 * each callback fires once with its own port. */
static void test_dns_resolve_burst_one_query(void **state)
{
    static const char *spell[] = {"burst.example", "BURST.Example.", "Burst.EXAMPLE"};
    static result_t res[BURST];
    dns_resolve_req_t *req;
    dns_resolver_t *r;
    uv_loop_t loop;
    fake_t *fk;
    int i;

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    fk = fake_start(&loop, FAKE_ANSWER);
    assert_int_equal(dns_resolver_create(&loop, fk->text, &r), 0);
    for (i = 0; i < BURST; i++)
        assert_int_equal(resolve(r, spell[i % 3], (uint16_t)(1000 + i), &res[i], &req), 0);
    run_until_all(&loop, res, BURST, 5000);
    run_for(&loop, 50); /* nothing fires twice */
    for (i = 0; i < BURST; i++)
        expect_answer(&res[i], strlen("burst.example"), (uint16_t)(1000 + i));
    assert_int_equal(fake_count(fk, "burst.example", QTYPE_A), 1);
    assert_int_equal(fake_count(fk, "burst.example", QTYPE_AAAA), 1);
    assert_int_equal(fk->queries, 2);

    /* the cache works as before: no query at all */
    for (i = 0; i < 10; i++)
        assert_int_equal(resolve(r, "burst.example", (uint16_t)(2000 + i), &res[i], &req), 0);
    run_until_all(&loop, res, 10, 5000);
    for (i = 0; i < 10; i++)
        expect_answer(&res[i], strlen("burst.example"), (uint16_t)(2000 + i));
    assert_int_equal(fk->queries, 2);

    /* without the cache, requests still share what is in flight, also across loop turns */
    dns_resolver_set_cache(r, 0);
    fk->mode = FAKE_HOLD;
    for (i = 0; i < BURST / 2; i++)
        assert_int_equal(resolve(r, "burst.example", (uint16_t)(3000 + i), &res[i], &req), 0);
    run_for(&loop, 50);
    assert_int_equal(fk->queries, 4);
    for (; i < BURST; i++)
        assert_int_equal(resolve(r, spell[i % 3], (uint16_t)(3000 + i), &res[i], &req), 0);
    run_for(&loop, 50);
    assert_int_equal(fk->queries, 4);
    assert_false(all_fired(res, 1));
    fake_release(fk, FAKE_ANSWER);
    run_until_all(&loop, res, BURST, 5000);
    run_for(&loop, 20);
    for (i = 0; i < BURST; i++)
        expect_answer(&res[i], strlen("burst.example"), (uint16_t)(3000 + i));
    assert_int_equal(fk->queries, 4);

    close_resolver(&loop, r);
    finish_loop(&loop, fk);
}

/* Different names are never merged, also when one is a prefix of another. */
static void test_dns_resolve_names_apart(void **state)
{
    static const char *names[] = {"a.example", "bb.example", "a.example.org", "aa.example"};
    result_t res[4][10];
    dns_resolve_req_t *req;
    dns_resolver_t *r;
    uv_loop_t loop;
    fake_t *fk;
    size_t i;
    size_t j;

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    fk = fake_start(&loop, FAKE_ANSWER);
    assert_int_equal(dns_resolver_create(&loop, fk->text, &r), 0);
    for (j = 0; j < 10; j++) {
        for (i = 0; i < 4; i++)
            assert_int_equal(resolve(r, names[i], (uint16_t)(80 + j), &res[i][j], &req), 0);
    }
    run_until_all(&loop, &res[0][0], 40, 5000);
    for (i = 0; i < 4; i++) {
        for (j = 0; j < 10; j++)
            expect_answer(&res[i][j], strlen(names[i]), (uint16_t)(80 + j));
        assert_int_equal(fake_count(fk, names[i], QTYPE_A), 1);
        assert_int_equal(fake_count(fk, names[i], QTYPE_AAAA), 1);
    }
    assert_int_equal(fk->queries, 8);
    close_resolver(&loop, r);
    finish_loop(&loop, fk);
}

/* Cancelling some requests, the first one among them, leaves the others answered. */
static void test_dns_resolve_cancel_one(void **state)
{
    dns_resolve_req_t *req[6];
    result_t res[6];
    dns_resolver_t *r;
    uv_loop_t loop;
    fake_t *fk;
    int i;

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    fk = fake_start(&loop, FAKE_HOLD);
    assert_int_equal(dns_resolver_create(&loop, fk->text, &r), 0);
    for (i = 0; i < 6; i++)
        assert_int_equal(resolve(r, "cancel.example", (uint16_t)(440 + i), &res[i], &req[i]), 0);
    run_for(&loop, 30);
    dns_resolve_cancel(req[0]); /* the one that sent the queries */
    dns_resolve_cancel(req[3]);
    dns_resolve_cancel(req[5]); /* the newest */
    run_for(&loop, 20);
    fake_release(fk, FAKE_ANSWER);
    run_until_all(&loop, &res[1], 2, 5000);
    run_until_all(&loop, &res[4], 1, 5000);
    run_for(&loop, 50);
    for (i = 0; i < 6; i++) {
        if (i == 0 || i == 3 || i == 5)
            assert_int_equal(res[i].fired, 0);
        else
            expect_answer(&res[i], strlen("cancel.example"), (uint16_t)(440 + i));
    }
    assert_int_equal(fk->queries, 2);
    close_resolver(&loop, r);
    finish_loop(&loop, fk);
}

/* Cancelling every request: no callback; the lookup still ends, its answer fills the cache,
 * and nothing leaks (also when the resolver closes with such a lookup unanswered). */
static void test_dns_resolve_cancel_all(void **state)
{
    dns_resolve_req_t *req[20];
    result_t res[20];
    result_t later;
    dns_resolver_t *r;
    uv_loop_t loop;
    fake_t *fk;
    int i;

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    fk = fake_start(&loop, FAKE_HOLD);
    assert_int_equal(dns_resolver_create(&loop, fk->text, &r), 0);
    for (i = 0; i < 20; i++)
        assert_int_equal(resolve(r, "gone.example", 443, &res[i], &req[i]), 0);
    for (i = 0; i < 20; i++)
        dns_resolve_cancel(req[i]); /* before any loop turn */
    run_for(&loop, 30);
    assert_int_equal(fk->queries, 2);
    fake_release(fk, FAKE_ANSWER);
    run_for(&loop, 100);
    for (i = 0; i < 20; i++)
        assert_int_equal(res[i].fired, 0);
    assert_int_equal(resolve(r, "GONE.example", 8443, &later, &req[0]), 0);
    run_until_all(&loop, &later, 1, 5000);
    expect_answer(&later, strlen("gone.example"), 8443);
    assert_int_equal(fk->queries, 2);

    /* all cancelled while upstream stays silent, then close */
    fk->mode = FAKE_SILENT;
    for (i = 0; i < 20; i++)
        assert_int_equal(resolve(r, "silent.example", 443, &res[i], &req[i]), 0);
    run_for(&loop, 30);
    for (i = 0; i < 20; i++)
        dns_resolve_cancel(req[i]);
    run_for(&loop, 30);
    close_resolver(&loop, r);
    for (i = 0; i < 20; i++)
        assert_int_equal(res[i].fired, 0);
    finish_loop(&loop, fk);
}

/* Closing the resolver ends every waiting request with UV_ECANCELED, once each. */
static void test_dns_resolve_close_waiters(void **state)
{
    static result_t res[100];
    dns_resolve_req_t *req;
    dns_resolver_t *r;
    uv_loop_t loop;
    fake_t *fk;
    int i;

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    fk = fake_start(&loop, FAKE_HOLD);
    assert_int_equal(dns_resolver_create(&loop, fk->text, &r), 0);
    for (i = 0; i < 100; i++) {
        const char *name = i % 2 ? "one.example" : "two.example";

        assert_int_equal(resolve(r, name, 443, &res[i], &req), 0);
        if (i == 50)
            run_for(&loop, 20); /* some join after the queries went out */
    }
    run_for(&loop, 20);
    assert_int_equal(fk->queries, 4);
    close_resolver(&loop, r);
    for (i = 0; i < 100; i++) {
        assert_int_equal(res[i].fired, 1);
        assert_int_equal(res[i].status, UV_ECANCELED);
        assert_string_equal(res[i].err, "cancelled");
    }
    fake_release(fk, FAKE_ANSWER); /* a late answer meets no resolver */
    run_for(&loop, 30);
    for (i = 0; i < 100; i++)
        assert_int_equal(res[i].fired, 1);
    finish_loop(&loop, fk);
}

/* SERVFAIL, NXDOMAIN and a timeout each reach every request sharing the lookup. */
static void test_dns_resolve_errors_shared(void **state)
{
    static const struct {
        fake_mode_t mode;
        const char *name;
        int status;
        const char *err;
    } t[] = {
        {FAKE_SERVFAIL, "broken.example", PX_EDNS, "DNS server returned SERVFAIL"},
        {FAKE_NXDOMAIN, "nope.example", PX_EDNS, "Name or service not known"},
        {FAKE_SILENT, "slow.example", PX_ETIMEOUT, "timed out"},
    };
    result_t res[30];
    dns_resolve_req_t *req;
    dns_resolver_t *r;
    uv_loop_t loop;
    fake_t *fk;
    size_t k;
    int i;

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    fk = fake_start(&loop, FAKE_HOLD);
    assert_int_equal(dns_resolver_create(&loop, fk->text, &r), 0);
    dns_resolver_set_timeout(r, 400);
    for (k = 0; k < sizeof(t) / sizeof(t[0]); k++) {
        unsigned before = fk->queries;

        fk->mode = FAKE_HOLD;
        for (i = 0; i < 30; i++) {
            assert_int_equal(resolve(r, t[k].name, (uint16_t)(i + 1), &res[i], &req), 0);
            if (i == 15)
                run_for(&loop, 20);
        }
        run_for(&loop, 20);
        fake_release(fk, t[k].mode);
        run_until_all(&loop, res, 30, 5000);
        run_for(&loop, 20);
        for (i = 0; i < 30; i++) {
            assert_int_equal(res[i].fired, 1);
            assert_int_equal(res[i].status, t[k].status);
            assert_string_equal(res[i].err, t[k].err);
            assert_int_equal(res[i].naddrs, 0);
        }
        assert_int_equal(fk->queries - before, 2);
        assert_int_equal(fake_count(fk, t[k].name, 0), 2);
    }
    close_resolver(&loop, r);
    finish_loop(&loop, fk);
}

/* A request that joins late keeps its own timeout, counted from its own call: the first
 * request timing out does not end it, the answer still reaches it, and its own timeout ends it
 * when no answer comes. */
static void test_dns_resolve_late_join_own_timeout(void **state)
{
    dns_resolve_req_t *req;
    dns_resolver_t *r;
    uv_loop_t loop;
    result_t first;
    result_t late;
    double t0;
    double t1;
    fake_t *fk;

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    fk = fake_start(&loop, FAKE_HOLD);
    assert_int_equal(dns_resolver_create(&loop, fk->text, &r), 0);

    /* the answer comes after the first request's timeout: the late one gets it */
    dns_resolver_set_timeout(r, 300);
    t0 = now_ms();
    assert_int_equal(resolve(r, "late.example", 443, &first, &req), 0);
    run_for(&loop, 250);
    dns_resolver_set_timeout(r, 5000);
    assert_int_equal(resolve(r, "late.example", 8443, &late, &req), 0);
    run_until_all(&loop, &first, 1, 2000);
    assert_int_equal(first.status, PX_ETIMEOUT);
    assert_true(first.at - t0 >= 290 && first.at - t0 < 1000);
    run_for(&loop, 100);
    assert_int_equal(late.fired, 0);
    fake_release(fk, FAKE_ANSWER);
    run_until_all(&loop, &late, 1, 2000);
    expect_answer(&late, strlen("late.example"), 8443);
    assert_int_equal(fk->queries, 2);

    /* no answer at all: each request times out on its own clock */
    fk->mode = FAKE_SILENT;
    dns_resolver_set_timeout(r, 300);
    t0 = now_ms();
    assert_int_equal(resolve(r, "quiet.example", 443, &first, &req), 0);
    run_for(&loop, 200);
    dns_resolver_set_timeout(r, 600);
    t1 = now_ms();
    assert_int_equal(resolve(r, "quiet.example", 443, &late, &req), 0);
    run_until_all(&loop, &first, 1, 2000);
    assert_int_equal(late.fired, 0);
    run_until_all(&loop, &late, 1, 2000);
    assert_int_equal(first.status, PX_ETIMEOUT);
    assert_int_equal(late.status, PX_ETIMEOUT);
    assert_true(first.at - t0 >= 290 && first.at - t0 < 1000);
    assert_true(late.at - t1 >= 590 && late.at - t1 < 1300);
    assert_int_equal(fake_count(fk, "quiet.example", 0), 2); /* c-ares retries after 1.5 s */

    close_resolver(&loop, r);
    finish_loop(&loop, fk);
}

/* c-ares gives up on a silent upstream after its tries (1.5 s + 3 s). The requests there from
 * the start get that timeout; one that joined 2 s later has had no full try of its own, so
 * the lookup is sent again for it, and that answer reaches it. */
static void test_dns_resolve_late_join_asked_again(void **state)
{
    dns_resolve_req_t *req;
    dns_resolver_t *r;
    uv_loop_t loop;
    result_t res[3];
    double t0;
    fake_t *fk;
    unsigned before;

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    fk = fake_start(&loop, FAKE_SILENT);
    assert_int_equal(dns_resolver_create(&loop, fk->text, &r), 0);
    dns_resolver_set_timeout(r, 10000);
    t0 = now_ms();
    assert_int_equal(resolve(r, "again.example", 1, &res[0], &req), 0);
    assert_int_equal(resolve(r, "again.example", 2, &res[1], &req), 0);
    run_for(&loop, 2000);
    assert_int_equal(resolve(r, "again.example", 3, &res[2], &req), 0);
    run_for(&loop, 1800); /* past c-ares' second try at 1.5 s */
    before = fk->queries;
    assert_int_equal(before, 4);
    fk->mode = FAKE_ANSWER;
    run_until_all(&loop, res, 3, 3000);
    assert_int_equal(res[0].status, PX_ETIMEOUT);
    assert_int_equal(res[1].status, PX_ETIMEOUT);
    assert_true(res[0].at - t0 >= 4000 && res[0].at - t0 < 6000);
    expect_answer(&res[2], strlen("again.example"), 3);
    assert_int_equal(fk->queries - before, 2);
    close_resolver(&loop, r);
    finish_loop(&loop, fk);
}

/* DNS_RESOLVE_PENDING_MAX bounds the requests waiting, joined or not, and the lookups in
 * flight, including those whose requests were all cancelled. */
static void test_dns_resolve_pending_max(void **state)
{
    static result_t res[DNS_RESOLVE_PENDING_MAX];
    static dns_resolve_req_t *reqs[DNS_RESOLVE_PENDING_MAX];
    dns_resolve_req_t *req;
    dns_resolver_t *r;
    uv_loop_t loop;
    result_t extra;
    fake_t *fk;
    char name[64];
    int i;

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    fk = fake_start(&loop, FAKE_SILENT);
    assert_int_equal(dns_resolver_create(&loop, fk->text, &r), 0);
    for (i = 0; i < DNS_RESOLVE_PENDING_MAX; i++)
        assert_int_equal(resolve(r, "many.example", 443, &res[i], &req), 0);
    assert_int_equal(resolve(r, "many.example", 443, &extra, &req), UV_EBUSY);
    assert_int_equal(resolve(r, "other.example", 443, &extra, &req), UV_EBUSY);
    run_for(&loop, 50);
    assert_int_equal(fk->queries, 2);
    close_resolver(&loop, r);
    for (i = 0; i < DNS_RESOLVE_PENDING_MAX; i++) {
        assert_int_equal(res[i].fired, 1);
        assert_int_equal(res[i].status, UV_ECANCELED);
    }

    /* as many names, every request cancelled: the lookups still count */
    assert_int_equal(dns_resolver_create(&loop, fk->text, &r), 0);
    for (i = 0; i < DNS_RESOLVE_PENDING_MAX; i++) {
        snprintf(name, sizeof(name), "n%d.example", i);
        assert_int_equal(resolve(r, name, 443, &res[i], &reqs[i]), 0);
        dns_resolve_cancel(reqs[i]);
    }
    run_for(&loop, 50);
    assert_int_equal(resolve(r, "new.example", 443, &extra, &req), UV_EBUSY);
    assert_int_equal(resolve(r, "n7.example", 443, &extra, &req), 0); /* joins */
    close_resolver(&loop, r);
    assert_int_equal(extra.status, UV_ECANCELED);
    for (i = 0; i < DNS_RESOLVE_PENDING_MAX; i++)
        assert_int_equal(res[i].fired, 0);
    finish_loop(&loop, fk);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dns_resolve_burst_one_query),
        cmocka_unit_test(test_dns_resolve_names_apart),
        cmocka_unit_test(test_dns_resolve_cancel_one),
        cmocka_unit_test(test_dns_resolve_cancel_all),
        cmocka_unit_test(test_dns_resolve_close_waiters),
        cmocka_unit_test(test_dns_resolve_errors_shared),
        cmocka_unit_test(test_dns_resolve_late_join_own_timeout),
        cmocka_unit_test(test_dns_resolve_late_join_asked_again),
        cmocka_unit_test(test_dns_resolve_pending_max),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
