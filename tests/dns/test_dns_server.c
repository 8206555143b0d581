/* dns_server over real loopback sockets (the server runs its own loop in a thread, the test
 * talks to it with blocking sockets), then dns_resolve against that same server and against
 * small fake servers (silent, SERVFAIL, NXDOMAIN) on the test's loop. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <uv.h>

#include "dns/dns_codec.h"
#include "dns/dns_resolve.h"
#include "dns/dns_server.h"
#include "base/px_err.h"

#define PROXY_IP "10.199.1.100"
#define TEST_TCP_TIMEOUT_MS 300
#define RECV_TIMEOUT_S 3
#define LOG_CAP (256 * 1024)

/* ---- the server under test, on its own loop and thread ---- */

typedef struct fixture {
    uv_loop_t loop;
    uv_async_t stop;
    pthread_t thread;
    dns_server_t *srv;
    struct sockaddr_storage addr;
    uint16_t port;
    pthread_mutex_t mu;
    char log[LOG_CAP];
    size_t log_len;
    unsigned log_lines;
    int closed;
} fixture_t;

static void on_log(void *data, const dns_log_fields_t *lf)
{
    /* the line as the proxy writes it (its audit event renders the same text) */
    char line[DNS_CODEC_LOG_LINE_MAX];
    int n = snprintf(line, sizeof(line), "DNS %s %.*s -> %s", lf->type, (int)lf->name_len, lf->name,
                     lf->answer);
    size_t len = n > 0 ? (size_t)n : 0;
    fixture_t *f = data;

    assert_int_equal(strlen(line), len);
    pthread_mutex_lock(&f->mu);
    if (f->log_len + len + 1 < LOG_CAP) {
        memcpy(f->log + f->log_len, line, len);
        f->log_len += len;
        f->log[f->log_len++] = '\n';
        f->log[f->log_len] = '\0';
    }
    f->log_lines++;
    pthread_mutex_unlock(&f->mu);
}

static void on_server_closed(void *data)
{
    fixture_t *f = data;

    f->closed = 1;
}

static void on_stop(uv_async_t *a)
{
    fixture_t *f = a->data;

    dns_server_close(f->srv, on_server_closed, f);
    dns_server_close(f->srv, on_server_closed, f); /* idempotent */
    uv_close((uv_handle_t *)&f->stop, NULL);
}

static void *server_thread(void *arg)
{
    fixture_t *f = arg;

    uv_run(&f->loop, UV_RUN_DEFAULT);
    return NULL;
}

static fixture_t *fixture_start_t(const char *ip, uint64_t tcp_timeout_ms)
{
    fixture_t *f = calloc(1, sizeof(*f));
    struct sockaddr_storage bind_addr;

    assert_non_null(f);
    pthread_mutex_init(&f->mu, NULL);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    if (strchr(ip, ':') != NULL)
        assert_int_equal(uv_ip6_addr(ip, 0, (struct sockaddr_in6 *)&bind_addr), 0);
    else
        assert_int_equal(uv_ip4_addr(ip, 0, (struct sockaddr_in *)&bind_addr), 0);
    assert_int_equal(
        dns_server_start(&f->loop, (struct sockaddr *)&bind_addr, PROXY_IP, on_log, f, &f->srv), 0);
    dns_server_set_tcp_timeout(f->srv, tcp_timeout_ms);
    assert_int_equal(dns_server_address(f->srv, &f->addr), 0);
    if (f->addr.ss_family == AF_INET)
        f->port = ntohs(((struct sockaddr_in *)&f->addr)->sin_port);
    else
        f->port = ntohs(((struct sockaddr_in6 *)&f->addr)->sin6_port);
    assert_true(f->port != 0);
    assert_int_equal(uv_async_init(&f->loop, &f->stop, on_stop), 0);
    f->stop.data = f;
    assert_int_equal(pthread_create(&f->thread, NULL, server_thread, f), 0);
    return f;
}

static fixture_t *fixture_start(const char *ip)
{
    return fixture_start_t(ip, TEST_TCP_TIMEOUT_MS);
}

static void fixture_stop(fixture_t *f)
{
    uv_async_send(&f->stop);
    pthread_join(f->thread, NULL);
    assert_int_equal(f->closed, 1);
    assert_int_equal(uv_loop_close(&f->loop), 0); /* every handle closed */
    pthread_mutex_destroy(&f->mu);
    free(f);
}

static unsigned log_lines(fixture_t *f)
{
    unsigned n;

    pthread_mutex_lock(&f->mu);
    n = f->log_lines;
    pthread_mutex_unlock(&f->mu);
    return n;
}

static int log_has(fixture_t *f, const char *line)
{
    char want[512];
    int found;

    snprintf(want, sizeof(want), "%s\n", line);
    pthread_mutex_lock(&f->mu);
    found = strstr(f->log, want) != NULL;
    pthread_mutex_unlock(&f->mu);
    return found;
}

/* ---- blocking clients ---- */

static size_t make_query(uint8_t *q, uint16_t id, const char *name, uint16_t qtype)
{
    size_t n = 12;
    const char *p = name;

    memset(q, 0, 12);
    q[0] = (uint8_t)(id >> 8);
    q[1] = (uint8_t)id;
    q[2] = 0x01; /* RD */
    q[5] = 1;    /* QDCOUNT */
    while (*p != '\0') {
        const char *dot = strchr(p, '.');
        size_t l = dot != NULL ? (size_t)(dot - p) : strlen(p);

        q[n++] = (uint8_t)l;
        memcpy(q + n, p, l);
        n += l;
        p += l;
        if (*p == '.')
            p++;
    }
    q[n++] = 0;
    q[n++] = (uint8_t)(qtype >> 8);
    q[n++] = (uint8_t)qtype;
    q[n++] = 0;
    q[n++] = 1;
    return n;
}

static void set_timeout(int fd, int seconds)
{
    struct timeval tv = {seconds, 0};

    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static socklen_t addr_len(const struct sockaddr_storage *ss)
{
    return ss->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
}

static int udp_socket(fixture_t *f)
{
    int fd = socket(f->addr.ss_family, SOCK_DGRAM, 0);

    assert_true(fd >= 0);
    set_timeout(fd, RECV_TIMEOUT_S);
    return fd;
}

static ssize_t udp_ask(fixture_t *f, int fd, const uint8_t *q, size_t qlen, uint8_t *ans,
                       size_t cap)
{
    assert_int_equal(sendto(fd, q, qlen, 0, (struct sockaddr *)&f->addr, addr_len(&f->addr)),
                     (ssize_t)qlen);
    return recv(fd, ans, cap, 0);
}

static int tcp_connect(fixture_t *f)
{
    int fd = socket(f->addr.ss_family, SOCK_STREAM, 0);

    assert_true(fd >= 0);
    set_timeout(fd, RECV_TIMEOUT_S);
    assert_int_equal(connect(fd, (struct sockaddr *)&f->addr, addr_len(&f->addr)), 0);
    return fd;
}

static void send_all(int fd, const uint8_t *b, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, b, len, MSG_NOSIGNAL);

        assert_true(n > 0);
        b += n;
        len -= (size_t)n;
    }
}

static int recv_all(int fd, uint8_t *b, size_t len)
{
    while (len > 0) {
        ssize_t n = recv(fd, b, len, 0);

        if (n <= 0)
            return -1;
        b += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Reads one length-prefixed answer. Returns its length, or -1 on EOF/error/timeout. */
static int tcp_read_answer(int fd, uint8_t *ans, size_t cap)
{
    uint8_t l[2];
    size_t len;

    if (recv_all(fd, l, 2) != 0)
        return -1;
    len = (size_t)l[0] << 8 | l[1];
    assert_true(len <= cap);
    if (recv_all(fd, ans, len) != 0)
        return -1;
    return (int)len;
}

static size_t tcp_frame(uint8_t *out, const uint8_t *q, size_t qlen)
{
    out[0] = (uint8_t)(qlen >> 8);
    out[1] = (uint8_t)qlen;
    memcpy(out + 2, q, qlen);
    return qlen + 2;
}

/* Returns 1 when the server closed fd (EOF or reset) within RECV_TIMEOUT_S. */
static int closed_by_peer(int fd)
{
    uint8_t b[64];
    ssize_t n;

    do
        n = recv(fd, b, sizeof(b), 0);
    while (n > 0);
    return n == 0 || (n < 0 && errno == ECONNRESET);
}

static void expect_a(const uint8_t *ans, int n, uint16_t id, size_t qlen)
{
    static const uint8_t rr[] = {0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 10, 199, 1, 100};

    assert_int_equal(n, (int)(qlen + sizeof(rr)));
    assert_int_equal(ans[0], id >> 8);
    assert_int_equal(ans[1], id & 0xff);
    assert_int_equal(ans[2], 0x81);
    assert_int_equal(ans[3], 0x80);
    assert_memory_equal(ans + n - sizeof(rr), rr, sizeof(rr));
}

/* ---- server tests ---- */

static void test_dns_server_udp(void **state)
{
    fixture_t *f = fixture_start("127.0.0.1");
    uint8_t q[512];
    uint8_t ans[1024];
    int fd = udp_socket(f);
    size_t qlen;
    ssize_t n;

    (void)state;
    qlen = make_query(q, 0x1234, "example.com", 1);
    n = udp_ask(f, fd, q, qlen, ans, sizeof(ans));
    expect_a(ans, (int)n, 0x1234, qlen);

    qlen = make_query(q, 0x4321, "evil.com", 28);
    n = udp_ask(f, fd, q, qlen, ans, sizeof(ans));
    assert_int_equal(n, (ssize_t)qlen);
    assert_int_equal(ans[3], 0x80); /* NOERROR */
    assert_int_equal(ans[7], 0);    /* no answer */

    assert_true(log_has(f, "DNS A example.com -> 10.199.1.100"));
    assert_true(log_has(f, "DNS AAAA evil.com -> NODATA"));
    assert_int_equal(log_lines(f), 2);
    close(fd);
    fixture_stop(f);
}

static void test_dns_server_udp_big(void **state)
{
    fixture_t *f = fixture_start("127.0.0.1");
    static uint8_t q[4096];
    uint8_t ans[1024];
    int fd = udp_socket(f);
    size_t qlen = make_query(q, 7, "big.example", 1);
    ssize_t n;

    (void)state;
    /* ARCOUNT 1: an OPT record with an EDNS padding option filling 4096 bytes */
    q[11] = 1;
    {
        size_t pad = sizeof(q) - qlen - 11 - 4;
        uint8_t opt[15] = {0, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 12, 0, 0};

        opt[9] = (uint8_t)((pad + 4) >> 8);
        opt[10] = (uint8_t)(pad + 4);
        opt[13] = (uint8_t)(pad >> 8);
        opt[14] = (uint8_t)pad;
        memcpy(q + qlen, opt, sizeof(opt));
        memset(q + qlen + sizeof(opt), 0, pad);
    }
    n = udp_ask(f, fd, q, sizeof(q), ans, sizeof(ans));
    assert_int_equal(n, 12 + 17 + 16 + 11); /* question, A, OPT */
    assert_int_equal(ans[11], 1);
    close(fd);
    fixture_stop(f);
}

static void test_dns_server_udp_ipv6(void **state)
{
    fixture_t *f = fixture_start("::1");
    uint8_t q[512];
    uint8_t ans[1024];
    int fd = udp_socket(f);
    size_t qlen = make_query(q, 0xbeef, "v6.example", 1);
    ssize_t n;

    (void)state;
    n = udp_ask(f, fd, q, qlen, ans, sizeof(ans));
    expect_a(ans, (int)n, 0xbeef, qlen);
    close(fd);
    fixture_stop(f);
}

static void test_dns_server_tcp_pipelined(void **state)
{
    fixture_t *f = fixture_start("127.0.0.1");
    uint8_t q[512];
    uint8_t buf[2048];
    uint8_t ans[1024];
    size_t qlen[3];
    size_t off = 0;
    int fd = tcp_connect(f);
    int i;

    (void)state;
    for (i = 0; i < 3; i++) {
        qlen[i] = make_query(q, (uint16_t)(100 + i), i == 1 ? "b.example.org" : "a.example", 1);
        off += tcp_frame(buf + off, q, qlen[i]);
    }
    send_all(fd, buf, off); /* three queries in one write */
    for (i = 0; i < 3; i++)
        expect_a(ans, tcp_read_answer(fd, ans, sizeof(ans)), (uint16_t)(100 + i), qlen[i]);
    /* and more on the same connection, one at a time */
    for (i = 0; i < 3; i++) {
        size_t l = make_query(q, (uint16_t)(200 + i), "c.example", 1);

        off = tcp_frame(buf, q, l);
        send_all(fd, buf, off);
        expect_a(ans, tcp_read_answer(fd, ans, sizeof(ans)), (uint16_t)(200 + i), l);
    }
    assert_true(log_has(f, "DNS A b.example.org -> 10.199.1.100"));
    close(fd);
    fixture_stop(f);
}

static void test_dns_server_tcp_split(void **state)
{
    fixture_t *f = fixture_start("127.0.0.1");
    uint8_t q[512];
    uint8_t buf[600];
    uint8_t ans[1024];
    int fd = tcp_connect(f);
    size_t qlen = make_query(q, 0x0a0b, "split.example", 1);
    size_t len = tcp_frame(buf, q, qlen);

    (void)state;
    /* the length prefix split in two, then the message split in the middle */
    send_all(fd, buf, 1);
    usleep(30000);
    send_all(fd, buf + 1, 10);
    usleep(30000);
    send_all(fd, buf + 11, len - 11);
    expect_a(ans, tcp_read_answer(fd, ans, sizeof(ans)), 0x0a0b, qlen);
    close(fd);
    fixture_stop(f);
}

static void test_dns_server_tcp_half_close(void **state)
{
    fixture_t *f = fixture_start("127.0.0.1");
    uint8_t q[512];
    uint8_t buf[600];
    uint8_t ans[1024];
    int fd = tcp_connect(f);
    size_t qlen = make_query(q, 77, "half.example", 1);

    (void)state;
    send_all(fd, buf, tcp_frame(buf, q, qlen));
    shutdown(fd, SHUT_WR);
    expect_a(ans, tcp_read_answer(fd, ans, sizeof(ans)), 77, qlen);
    assert_true(closed_by_peer(fd));
    close(fd);
    fixture_stop(f);
}

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void test_dns_server_tcp_stall(void **state)
{
    fixture_t *f = fixture_start("127.0.0.1");
    uint8_t q[512];
    uint8_t ans[1024];
    uint8_t len_only[2] = {0, 40};
    int stall = tcp_connect(f);
    int idle = tcp_connect(f);
    int fd;
    double t0 = now_ms();

    (void)state;
    send_all(stall, len_only, 2); /* a length, then nothing */
    assert_true(closed_by_peer(stall));
    assert_true(closed_by_peer(idle));
    /* dropped after the short timeout, well before the receive timeout */
    assert_true(now_ms() - t0 < RECV_TIMEOUT_S * 1000);
    close(stall);
    close(idle);
    /* the server still answers */
    fd = tcp_connect(f);
    {
        uint8_t buf[600];
        size_t qlen = make_query(q, 5, "after.stall", 1);

        send_all(fd, buf, tcp_frame(buf, q, qlen));
        expect_a(ans, tcp_read_answer(fd, ans, sizeof(ans)), 5, qlen);
    }
    close(fd);
    fixture_stop(f);
}

static void test_dns_server_tcp_bad_lengths(void **state)
{
    fixture_t *f = fixture_start("127.0.0.1");
    uint8_t zero[2] = {0, 0};
    uint8_t huge[2] = {0xff, 0xff};
    uint8_t over[2] = {(DNS_SERVER_TCP_MSG_MAX + 1) >> 8, (DNS_SERVER_TCP_MSG_MAX + 1) & 0xff};
    uint8_t q[512];
    uint8_t buf[600];
    uint8_t ans[1024];
    uint8_t *cases[] = {zero, huge, over};
    size_t i;
    int fd;

    (void)state;
    for (i = 0; i < 3; i++) {
        fd = tcp_connect(f);
        send_all(fd, cases[i], 2);
        assert_true(closed_by_peer(fd));
        close(fd);
    }
    /* a short message (no header) is read and skipped without an answer */
    fd = tcp_connect(f);
    {
        uint8_t shortmsg[7] = {0, 5, 1, 2, 3, 4, 5};
        size_t qlen = make_query(q, 9, "ok.example", 1);

        send_all(fd, shortmsg, sizeof(shortmsg));
        send_all(fd, buf, tcp_frame(buf, q, qlen));
        expect_a(ans, tcp_read_answer(fd, ans, sizeof(ans)), 9, qlen);
    }
    close(fd);
    fixture_stop(f);
}

static void test_dns_server_garbage(void **state)
{
    fixture_t *f = fixture_start("127.0.0.1");
    uint8_t q[700];
    uint8_t ans[1024];
    int fd = udp_socket(f);
    unsigned seed = 12345;
    int i;
    size_t qlen;

    (void)state;
    for (i = 0; i < 3000; i++) {
        size_t len = (size_t)(rand_r(&seed) % 600);
        size_t j;

        for (j = 0; j < len; j++)
            q[j] = (uint8_t)rand_r(&seed);
        if (len > 2 && (i & 1))
            q[2] &= 0x7f; /* half of them look like queries (QR clear) */
        sendto(fd, q, len, 0, (struct sockaddr *)&f->addr, addr_len(&f->addr));
    }
    /* drain what was answered, then a real query still works */
    {
        struct timeval tv = {0, 200000};

        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        while (recv(fd, ans, sizeof(ans), 0) > 0) {
        }
        set_timeout(fd, RECV_TIMEOUT_S);
    }
    qlen = make_query(q, 0x5555, "still.alive", 1);
    expect_a(ans, (int)udp_ask(f, fd, q, qlen, ans, sizeof(ans)), 0x5555, qlen);
    close(fd);

    /* TCP garbage: random frames on a few connections */
    for (i = 0; i < 20; i++) {
        uint8_t buf[700];
        size_t len = (size_t)(rand_r(&seed) % sizeof(buf));
        size_t j;
        int t = tcp_connect(f);

        for (j = 0; j < len; j++)
            buf[j] = (uint8_t)rand_r(&seed);
        send(t, buf, len, MSG_NOSIGNAL);
        close(t);
    }
    {
        int t = tcp_connect(f);
        uint8_t buf[600];

        qlen = make_query(q, 0x6666, "tcp.alive", 1);
        send_all(t, buf, tcp_frame(buf, q, qlen));
        expect_a(ans, tcp_read_answer(t, ans, sizeof(ans)), 0x6666, qlen);
        close(t);
    }
    fixture_stop(f);
}

static void test_dns_server_tcp_conn_cap(void **state)
{
    fixture_t *f = fixture_start_t("127.0.0.1", 30000);
    static int fds[DNS_SERVER_TCP_CONNS_MAX];
    uint8_t q[512];
    uint8_t buf[600];
    uint8_t ans[1024];
    size_t qlen = make_query(q, 1, "cap.example", 1);
    size_t flen = tcp_frame(buf, q, qlen);
    int extra;
    int i;
    int ok = 0;

    (void)state;
    for (i = 0; i < DNS_SERVER_TCP_CONNS_MAX; i++) {
        fds[i] = tcp_connect(f);
        send_all(fds[i], buf, flen);
        expect_a(ans, tcp_read_answer(fds[i], ans, sizeof(ans)), 1, qlen);
    }
    extra = tcp_connect(f);
    assert_true(closed_by_peer(extra));
    close(extra);
    /* free one slot: a new client is served again */
    close(fds[0]);
    for (i = 0; i < 50 && !ok; i++) {
        int t = tcp_connect(f);

        send(t, buf, flen, MSG_NOSIGNAL);
        ok = tcp_read_answer(t, ans, sizeof(ans)) > 0;
        close(t);
        if (!ok)
            usleep(20000);
    }
    assert_true(ok);
    for (i = 1; i < DNS_SERVER_TCP_CONNS_MAX; i++)
        close(fds[i]);
    fixture_stop(f);
}

/* A client that writes many queries before reading: every answer arrives, in order. */
static void test_dns_server_tcp_slow_reader(void **state)
{
    enum { N = 120000 }; /* 5.7 MB of answers: more than the kernel buffers (tcp_wmem 4 MB) */
    fixture_t *f = fixture_start_t("127.0.0.1", 10000);
    static uint8_t out[N * 40];
    uint8_t q[512];
    uint8_t ans[1024];
    size_t total = 0;
    size_t sent = 0;
    int rcvbuf = 4096;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int got = 0;
    int i;

    (void)state;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    set_timeout(fd, RECV_TIMEOUT_S);
    assert_int_equal(connect(fd, (struct sockaddr *)&f->addr, addr_len(&f->addr)), 0);
    for (i = 0; i < N; i++) {
        size_t l = make_query(q, (uint16_t)(i & 0xffff), "slow.example", 1);

        total += tcp_frame(out + total, q, l);
    }
    while (sent < total) {
        ssize_t n = send(fd, out + sent, total - sent, MSG_DONTWAIT | MSG_NOSIGNAL);

        if (n > 0) {
            sent += (size_t)n;
            continue;
        }
        assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
        /* the server stopped reading us: take one answer and try again */
        assert_true(tcp_read_answer(fd, ans, sizeof(ans)) > 0);
        assert_int_equal(ans[0] << 8 | ans[1], got & 0xffff);
        got++;
    }
    for (; got < N; got++) {
        assert_true(tcp_read_answer(fd, ans, sizeof(ans)) > 0);
        assert_int_equal(ans[0] << 8 | ans[1], got & 0xffff);
    }
    close(fd);
    fixture_stop(f);
}

/* Stopping the server with clients connected and a query half sent. */
static void test_dns_server_close_with_clients(void **state)
{
    fixture_t *f = fixture_start("127.0.0.1");
    int a = tcp_connect(f);
    int b = tcp_connect(f);
    uint8_t part[3] = {0, 30, 0x12};

    (void)state;
    send_all(b, part, sizeof(part));
    usleep(50000);
    fixture_stop(f); /* asserts the close callback fired and the loop has no handles */
    assert_true(closed_by_peer(a));
    assert_true(closed_by_peer(b));
    close(a);
    close(b);
}

static void test_dns_server_start_errors(void **state)
{
    uv_loop_t loop;
    struct sockaddr_in sin;
    struct sockaddr_storage got;
    dns_server_t *srv = NULL;
    dns_server_t *srv2 = NULL;
    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    uv_ip4_addr("127.0.0.1", 0, &sin);
    assert_int_equal(
        dns_server_start(&loop, (struct sockaddr *)&sin, "not-an-ip", NULL, NULL, &srv), UV_EINVAL);
    assert_int_equal(dns_server_start(&loop, (struct sockaddr *)&sin, "::1", NULL, NULL, &srv),
                     UV_EINVAL);
    /* no log callback is fine */
    assert_int_equal(dns_server_start(&loop, (struct sockaddr *)&sin, PROXY_IP, NULL, NULL, &srv),
                     0);
    assert_int_equal(dns_server_address(srv, &got), 0);
    /* the same port again: in use */
    assert_int_equal(dns_server_start(&loop, (struct sockaddr *)&got, PROXY_IP, NULL, NULL, &srv2),
                     UV_EADDRINUSE);
    dns_server_close(srv, NULL, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- resolver tests: the test's loop on this thread, the server on its thread ---- */

typedef struct result {
    int fired;
    int status;
    size_t naddrs;
    struct sockaddr_storage addrs[DNS_RESOLVE_ADDRS_MAX];
    char err[128];
} result_t;

static void on_resolved(int status, const struct sockaddr_storage *addrs, size_t naddrs,
                        const char *err, void *data)
{
    result_t *r = data;
    size_t i;

    r->fired++;
    r->status = status;
    r->naddrs = naddrs;
    for (i = 0; i < naddrs; i++)
        r->addrs[i] = addrs[i];
    if (err != NULL)
        snprintf(r->err, sizeof(r->err), "%s", err);
    if (status == 0)
        assert_null(err);
    else
        assert_non_null(err);
}

static void run_until(uv_loop_t *loop, const int *flag, double max_ms)
{
    double t0 = now_ms();

    while (!*flag && now_ms() - t0 < max_ms)
        uv_run(loop, UV_RUN_NOWAIT), usleep(1000);
}

static void run_for(uv_loop_t *loop, double ms)
{
    double t0 = now_ms();

    while (now_ms() - t0 < ms)
        uv_run(loop, UV_RUN_NOWAIT), usleep(1000);
}

static void on_resolver_closed(void *data)
{
    (*(int *)data)++;
}

static void close_resolver(uv_loop_t *loop, dns_resolver_t *r)
{
    int closed = 0;

    dns_resolver_close(r, on_resolver_closed, &closed);
    dns_resolver_close(r, on_resolver_closed, &closed); /* idempotent */
    run_until(loop, &closed, 5000);
    assert_int_equal(closed, 1);
}

static void server_text(const fixture_t *f, char *buf, size_t cap)
{
    char ip[64];

    if (f->addr.ss_family == AF_INET) {
        uv_ip4_name((const struct sockaddr_in *)&f->addr, ip, sizeof(ip));
        snprintf(buf, cap, "%s:%u", ip, f->port);
    } else {
        uv_ip6_name((const struct sockaddr_in6 *)&f->addr, ip, sizeof(ip));
        snprintf(buf, cap, "[%s]:%u", ip, f->port);
    }
}

static void expect_proxy_ip(const result_t *res, uint16_t port)
{
    const struct sockaddr_in *sin = (const struct sockaddr_in *)&res->addrs[0];
    char ip[32];

    assert_int_equal(res->fired, 1);
    assert_int_equal(res->status, 0);
    assert_int_equal(res->naddrs, 1);
    assert_int_equal(sin->sin_family, AF_INET);
    assert_int_equal(ntohs(sin->sin_port), port);
    uv_ip4_name(sin, ip, sizeof(ip));
    assert_string_equal(ip, PROXY_IP);
}

static void test_dns_resolve_against_server(void **state)
{
    fixture_t *f = fixture_start("127.0.0.1");
    uv_loop_t loop;
    dns_resolver_t *r;
    dns_resolve_req_t *req;
    result_t res;
    char server[96];
    unsigned before;

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    server_text(f, server, sizeof(server));
    assert_int_equal(dns_resolver_create(&loop, server, &r), 0);

    memset(&res, 0, sizeof(res));
    assert_int_equal(dns_resolve(r, "api.github.com", 443, on_resolved, &res, &req), 0);
    assert_int_equal(res.fired, 0); /* never inside dns_resolve */
    run_until(&loop, &res.fired, 5000);
    expect_proxy_ip(&res, 443);
    assert_true(log_has(f, "DNS A api.github.com -> 10.199.1.100"));
    assert_true(log_has(f, "DNS AAAA api.github.com -> NODATA"));

    /* cached (TTL 60): same name in another case and with a trailing dot, no new query */
    before = log_lines(f);
    memset(&res, 0, sizeof(res));
    assert_int_equal(dns_resolve(r, "API.GitHub.com.", 80, on_resolved, &res, &req), 0);
    assert_int_equal(res.fired, 0);
    run_until(&loop, &res.fired, 5000);
    expect_proxy_ip(&res, 80);
    assert_int_equal(log_lines(f), before);

    /* cache off: asks again */
    dns_resolver_set_cache(r, 0);
    memset(&res, 0, sizeof(res));
    assert_int_equal(dns_resolve(r, "api.github.com", 443, on_resolved, &res, &req), 0);
    run_until(&loop, &res.fired, 5000);
    expect_proxy_ip(&res, 443);
    assert_true(log_lines(f) > before);

    /* several at once */
    {
        result_t many[20];
        int i;
        int all = 0;

        memset(many, 0, sizeof(many));
        for (i = 0; i < 20; i++) {
            char name[64];

            snprintf(name, sizeof(name), "host%d.example.test", i);
            assert_int_equal(dns_resolve(r, name, 8080, on_resolved, &many[i], &req), 0);
        }
        while (!all) {
            run_until(&loop, &many[19].fired, 5000);
            all = 1;
            for (i = 0; i < 20; i++)
                all &= many[i].fired == 1;
            if (!all)
                run_for(&loop, 10);
        }
        for (i = 0; i < 20; i++)
            expect_proxy_ip(&many[i], 8080);
    }
    close_resolver(&loop, r);
    assert_int_equal(uv_loop_close(&loop), 0);
    fixture_stop(f);
}

static void test_dns_resolve_ipv6_server(void **state)
{
    fixture_t *f = fixture_start("::1");
    uv_loop_t loop;
    dns_resolver_t *r;
    dns_resolve_req_t *req;
    result_t res;
    char server[96];

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    server_text(f, server, sizeof(server));
    assert_int_equal(dns_resolver_create(&loop, server, &r), 0);
    memset(&res, 0, sizeof(res));
    assert_int_equal(dns_resolve(r, "six.example", 443, on_resolved, &res, &req), 0);
    run_until(&loop, &res.fired, 5000);
    expect_proxy_ip(&res, 443);
    close_resolver(&loop, r);
    assert_int_equal(uv_loop_close(&loop), 0);
    fixture_stop(f);
}

static void test_dns_resolve_literals(void **state)
{
    uv_loop_t loop;
    dns_resolver_t *r;
    dns_resolve_req_t *req;
    result_t res;
    char ip[64];
    static const struct {
        const char *host;
        int family;
        const char *text;
    } t[] = {
        {"192.0.2.7", AF_INET, "192.0.2.7"},
        {"2001:db8::1", AF_INET6, "2001:db8::1"},
        {"[2001:db8::2]", AF_INET6, "2001:db8::2"},
        {"::ffff:10.0.0.1", AF_INET6, "::ffff:10.0.0.1"},
    };
    size_t i;

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    /* port 1 on loopback: nothing answers, so any query would fail */
    assert_int_equal(dns_resolver_create(&loop, "127.0.0.1:1", &r), 0);
    for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        memset(&res, 0, sizeof(res));
        assert_int_equal(dns_resolve(r, t[i].host, 8443, on_resolved, &res, &req), 0);
        assert_int_equal(res.fired, 0);
        run_until(&loop, &res.fired, 1000);
        assert_int_equal(res.fired, 1);
        assert_int_equal(res.status, 0);
        assert_int_equal(res.naddrs, 1);
        assert_int_equal(res.addrs[0].ss_family, t[i].family);
        if (t[i].family == AF_INET) {
            uv_ip4_name((struct sockaddr_in *)&res.addrs[0], ip, sizeof(ip));
            assert_int_equal(ntohs(((struct sockaddr_in *)&res.addrs[0])->sin_port), 8443);
        } else {
            uv_ip6_name((struct sockaddr_in6 *)&res.addrs[0], ip, sizeof(ip));
            assert_int_equal(ntohs(((struct sockaddr_in6 *)&res.addrs[0])->sin6_port), 8443);
        }
        assert_string_equal(ip, t[i].text);
    }
    /* bad hosts fail synchronously */
    assert_int_equal(dns_resolve(r, "", 80, on_resolved, &res, &req), UV_EINVAL);
    assert_int_equal(dns_resolve(r, "a b.com", 80, on_resolved, &res, &req), UV_EINVAL);
    assert_int_equal(dns_resolve(r, "a\nb.com", 80, on_resolved, &res, &req), UV_EINVAL);
    {
        char longname[400];

        memset(longname, 'a', sizeof(longname) - 1);
        longname[sizeof(longname) - 1] = '\0';
        assert_int_equal(dns_resolve(r, longname, 80, on_resolved, &res, &req), UV_EINVAL);
    }
    close_resolver(&loop, r);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_dns_resolve_bad_servers(void **state)
{
    static const char *bad[] = {"",         "foo",         "1.2.3.4:0",  "1.2.3.4:65536",
                                "1.2.3.4:", "1.2.3.4:53x", "[::1",       "[::1]x",
                                "[::1]:",   "1.2.3.4.5",   "[1.2.3.4]z", "::1:53:"};
    static const char *good[] = {"127.0.0.1", "127.0.0.1:5353", "::1",
                                 "[::1]:53",  "[::1]",          "2001:db8::53"};
    uv_loop_t loop;
    dns_resolver_t *r;
    size_t i;

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (dns_resolver_create(&loop, bad[i], &r) != UV_EINVAL)
            fail_msg("server '%s' accepted", bad[i]);
    }
    for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        if (dns_resolver_create(&loop, good[i], &r) != 0)
            fail_msg("server '%s' refused", good[i]);
        close_resolver(&loop, r);
    }
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- fake upstream servers on the test's loop ---- */

typedef struct fake {
    uv_udp_t udp;
    int rcode; /* -1: never answer */
    int queries;
    uint8_t out[1024];
    uv_udp_send_t req;
    char text[96];
} fake_t;

static void on_fake_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    static uint8_t in[2048];

    (void)h;
    (void)suggested;
    buf->base = (char *)in;
    buf->len = sizeof(in);
}

static void on_fake_recv(uv_udp_t *h, ssize_t nread, const uv_buf_t *buf,
                         const struct sockaddr *addr, unsigned flags)
{
    fake_t *fk = (fake_t *)h; /* udp is the first member */

    (void)flags;
    if (nread < 12 || addr == NULL)
        return;
    fk->queries++;
    if (fk->rcode < 0)
        return;
    {
        size_t n = (size_t)nread;
        uv_buf_t b;

        memcpy(fk->out, buf->base, n);
        fk->out[2] = 0x81;
        fk->out[3] = (uint8_t)(0x80 | fk->rcode);
        fk->out[7] = 0;
        fk->out[9] = 0;
        fk->out[11] = 0; /* drop any OPT: n is trimmed below to header + question */
        {
            size_t off = 12;

            while (off < n && fk->out[off] != 0)
                off += 1u + fk->out[off];
            n = off + 5;
        }
        b = uv_buf_init((char *)fk->out, (unsigned)n);
        uv_udp_try_send(h, &b, 1, addr);
    }
}

static void fake_start(uv_loop_t *loop, fake_t *fk, int rcode)
{
    struct sockaddr_in sin;
    struct sockaddr_storage ss;
    int len = sizeof(ss);
    char ip[32];

    memset(fk, 0, sizeof(*fk));
    fk->rcode = rcode;
    assert_int_equal(uv_udp_init(loop, &fk->udp), 0);
    uv_ip4_addr("127.0.0.1", 0, &sin);
    assert_int_equal(uv_udp_bind(&fk->udp, (struct sockaddr *)&sin, 0), 0);
    assert_int_equal(uv_udp_getsockname(&fk->udp, (struct sockaddr *)&ss, &len), 0);
    uv_ip4_name((struct sockaddr_in *)&ss, ip, sizeof(ip));
    snprintf(fk->text, sizeof(fk->text), "%s:%u", ip, ntohs(((struct sockaddr_in *)&ss)->sin_port));
    assert_int_equal(uv_udp_recv_start(&fk->udp, on_fake_alloc, on_fake_recv), 0);
}

static void fake_stop(uv_loop_t *loop, fake_t *fk)
{
    uv_close((uv_handle_t *)&fk->udp, NULL);
    uv_run(loop, UV_RUN_DEFAULT);
}

static void test_dns_resolve_timeout(void **state)
{
    uv_loop_t loop;
    fake_t fk;
    dns_resolver_t *r;
    dns_resolve_req_t *req;
    result_t res;
    double t0;

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    fake_start(&loop, &fk, -1);
    assert_int_equal(dns_resolver_create(&loop, fk.text, &r), 0);
    dns_resolver_set_timeout(r, 300);
    memset(&res, 0, sizeof(res));
    t0 = now_ms();
    assert_int_equal(dns_resolve(r, "slow.example", 443, on_resolved, &res, &req), 0);
    run_until(&loop, &res.fired, 5000);
    assert_int_equal(res.fired, 1);
    assert_int_equal(res.status, PX_ETIMEOUT);
    assert_string_equal(res.err, "timed out");
    assert_int_equal(res.naddrs, 0);
    assert_true(now_ms() - t0 < 4000);
    assert_true(fk.queries >= 1);
    /* the late c-ares callback must not fire ours again */
    run_for(&loop, 200);
    assert_int_equal(res.fired, 1);
    close_resolver(&loop, r);
    fake_stop(&loop, &fk);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_dns_resolve_servfail(void **state)
{
    uv_loop_t loop;
    fake_t fk;
    dns_resolver_t *r;
    dns_resolve_req_t *req;
    result_t res;

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    fake_start(&loop, &fk, 2);
    assert_int_equal(dns_resolver_create(&loop, fk.text, &r), 0);
    memset(&res, 0, sizeof(res));
    assert_int_equal(dns_resolve(r, "broken.example", 443, on_resolved, &res, &req), 0);
    run_until(&loop, &res.fired, 8000);
    assert_int_equal(res.fired, 1);
    assert_int_equal(res.status, PX_EDNS);
    assert_string_equal(res.err, "DNS server returned SERVFAIL");
    close_resolver(&loop, r);
    fake_stop(&loop, &fk);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_dns_resolve_nxdomain(void **state)
{
    uv_loop_t loop;
    fake_t fk;
    dns_resolver_t *r;
    dns_resolve_req_t *req;
    result_t res;

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    fake_start(&loop, &fk, 3);
    assert_int_equal(dns_resolver_create(&loop, fk.text, &r), 0);
    memset(&res, 0, sizeof(res));
    assert_int_equal(dns_resolve(r, "nope.example", 443, on_resolved, &res, &req), 0);
    run_until(&loop, &res.fired, 8000);
    assert_int_equal(res.fired, 1);
    assert_int_equal(res.status, PX_EDNS);
    assert_string_equal(res.err, "Name or service not known");
    /* the name was asked as given: no search domain appended */
    assert_int_equal(fk.queries, 2); /* A and AAAA, once each */
    close_resolver(&loop, r);
    fake_stop(&loop, &fk);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_dns_resolve_cancel(void **state)
{
    uv_loop_t loop;
    fake_t fk;
    dns_resolver_t *r;
    dns_resolve_req_t *req;
    dns_resolve_req_t *req2;
    result_t res;
    result_t res2;
    result_t lit;

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    fake_start(&loop, &fk, -1);
    assert_int_equal(dns_resolver_create(&loop, fk.text, &r), 0);
    dns_resolver_set_timeout(r, 200);
    memset(&res, 0, sizeof(res));
    memset(&res2, 0, sizeof(res2));
    memset(&lit, 0, sizeof(lit));
    assert_int_equal(dns_resolve(r, "cancel.example", 443, on_resolved, &res, &req), 0);
    run_for(&loop, 20);
    dns_resolve_cancel(req);
    /* a literal cancelled before its delivery, too */
    assert_int_equal(dns_resolve(r, "192.0.2.1", 443, on_resolved, &lit, &req2), 0);
    dns_resolve_cancel(req2);
    run_for(&loop, 400); /* past the timeout: nothing may fire */
    assert_int_equal(res.fired, 0);
    assert_int_equal(lit.fired, 0);

    /* closing the resolver with a lookup pending: it ends with UV_ECANCELED, once */
    dns_resolver_set_timeout(r, 5000);
    assert_int_equal(dns_resolve(r, "pending.example", 443, on_resolved, &res2, &req), 0);
    run_for(&loop, 20);
    close_resolver(&loop, r);
    assert_int_equal(res2.fired, 1);
    assert_int_equal(res2.status, UV_ECANCELED);
    fake_stop(&loop, &fk);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dns_server_udp),
        cmocka_unit_test(test_dns_server_udp_big),
        cmocka_unit_test(test_dns_server_udp_ipv6),
        cmocka_unit_test(test_dns_server_tcp_pipelined),
        cmocka_unit_test(test_dns_server_tcp_split),
        cmocka_unit_test(test_dns_server_tcp_half_close),
        cmocka_unit_test(test_dns_server_tcp_stall),
        cmocka_unit_test(test_dns_server_tcp_bad_lengths),
        cmocka_unit_test(test_dns_server_garbage),
        cmocka_unit_test(test_dns_server_tcp_conn_cap),
        cmocka_unit_test(test_dns_server_tcp_slow_reader),
        cmocka_unit_test(test_dns_server_close_with_clients),
        cmocka_unit_test(test_dns_server_start_errors),
        cmocka_unit_test(test_dns_resolve_against_server),
        cmocka_unit_test(test_dns_resolve_ipv6_server),
        cmocka_unit_test(test_dns_resolve_literals),
        cmocka_unit_test(test_dns_resolve_bad_servers),
        cmocka_unit_test(test_dns_resolve_timeout),
        cmocka_unit_test(test_dns_resolve_servfail),
        cmocka_unit_test(test_dns_resolve_nxdomain),
        cmocka_unit_test(test_dns_resolve_cancel),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
