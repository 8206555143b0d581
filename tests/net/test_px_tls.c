/* Upstream TLS session resumption (px_tls.c): a client context made by px_tls_client_ctx_new()
 * against in-memory servers (px_tls objects on both sides, bytes shuttled by hand). The
 * second connection to the same host:port resumes (TLS 1.3 tickets single use, up to
 * PX_TLS_TICKETS_PER_KEY kept per key and the newest offered first, TLS 1.2 sessions kept),
 * another name or port is never offered the session, a failed or abandoned resumption forgets
 * all of its key's sessions and no other key's, and verification still runs when the server
 * refuses the session. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/core_names.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>

#include "ca/ca.h"
#include "proxy/px_config.h"
#include "net/px_tls.h"

typedef struct fixture {
    char dir_good[64]; /* CA the client trusts */
    char dir_bad[64];  /* another CA, untrusted */
    char ca_file[128];
    ca_t *good;
    ca_t *bad;
} fixture_t;

typedef struct result {
    int offered; /* a remembered session was set before the handshake */
    int done;    /* 1 handshake complete, <0 the client's handshake failed */
    int reused;
    size_t kept; /* sessions the client context held right after the handshake ended */
    char err[256];
} result_t;

static int on_server_cert(SSL *ssl, void *arg)
{
    ca_t *ca = arg;
    const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    if (name == NULL)
        name = "127.0.0.1";
    ca_leaf_t *leaf = NULL;
    if (ca_leaf_acquire(ca, name, strlen(name), &leaf) != 0)
        return 0;
    int ok = SSL_use_certificate(ssl, ca_leaf_get_cert(leaf)) == 1 &&
             SSL_use_PrivateKey(ssl, ca_leaf_get_key(leaf)) == 1 &&
             SSL_set1_chain(ssl, ca_leaf_get_chain(leaf)) == 1;
    ca_leaf_release(leaf);
    return ok;
}

static SSL_CTX *server_ctx(ca_t *ca, int max_version)
{
    SSL_CTX *ctx = NULL;
    char err[256];
    assert_int_equal(px_tls_server_ctx_new(on_server_cert, ca, &ctx, err, sizeof(err)), 0);
    SSL_CTX_set_max_proto_version(ctx, max_version);
    return ctx;
}

static SSL_CTX *client_ctx(const fixture_t *f)
{
    SSL_CTX *ctx = NULL;
    char err[256];
    assert_int_equal(px_tls_client_ctx_new(f->ca_file, &ctx, err, sizeof(err)), 0);
    return ctx;
}

static void shuttle(px_tls_t *from, px_tls_t *to)
{
    size_t n;
    char *out = px_tls_take_output(from, &n);
    if (out != NULL) {
        assert_int_equal(px_tls_feed(to, out, n), 0);
        free(out);
    }
}

/* Starts a connection from cli to host:port without driving it. */
static px_tls_t *client_for(SSL_CTX *cli, const char *host, uint16_t port, result_t *r)
{
    px_tls_t *c = px_tls_new(cli, 0, NULL);
    assert_non_null(c);
    assert_int_equal(px_tls_set_upstream_host(c, host, port), 0);
    r->offered = SSL_get_session(px_tls_ssl(c)) != NULL;
    return c;
}

/* Drives c (made by client_for() into r) against a new connection of srv: handshake and
 * (TLS 1.3) tickets read; frees c. */
static void drive(px_tls_t *c, SSL_CTX *cli, SSL_CTX *srv, result_t *rp)
{
    result_t r = *rp;
    px_tls_t *s = px_tls_new(srv, 1, NULL);
    assert_non_null(s);
    char serr[256];
    int crc = 0, src = 0;
    for (int i = 0; i < 20 && (crc != 1 || src != 1); i++) {
        if (crc == 0)
            crc = px_tls_handshake(c, r.err, sizeof(r.err));
        shuttle(c, s);
        if (crc < 0)
            break;
        if (src == 0)
            src = px_tls_handshake(s, serr, sizeof(serr));
        shuttle(s, c);
        if (src < 0 && crc != 0)
            break;
    }
    r.kept = px_tls_client_sessions(cli);
    if (crc == 1) {
        char buf[64];
        assert_int_equal(px_tls_read(c, buf, sizeof(buf)), 0); /* takes in the tickets */
        r.reused = SSL_session_reused(px_tls_ssl(c));
    }
    r.done = crc;
    px_tls_free(c);
    px_tls_free(s);
    *rp = r;
}

/* One connection from cli to srv for host:port, handshake and (TLS 1.3) tickets read. */
static result_t connect_once(SSL_CTX *cli, SSL_CTX *srv, const char *host, uint16_t port)
{
    result_t r = {0};
    px_tls_t *c = client_for(cli, host, port, &r);
    drive(c, cli, srv, &r);
    return r;
}

/* Server side numbering of TLS 1.3 tickets: each ticket a server issues carries its number
 * (ticket app data); a resumption records the number of the ticket presented. */
typedef struct tickets {
    unsigned issued;
    unsigned used[64]; /* numbers presented, in order */
    size_t nused;
} tickets_t;

static int on_ticket_gen(SSL *s, void *arg)
{
    tickets_t *tk = arg;
    unsigned no = ++tk->issued;
    return SSL_SESSION_set1_ticket_appdata(SSL_get_session(s), &no, sizeof(no));
}

static SSL_TICKET_RETURN on_ticket_dec(SSL *s, SSL_SESSION *ss, const unsigned char *keyname,
                                       size_t keyname_len, SSL_TICKET_STATUS status, void *arg)
{
    (void)s;
    (void)keyname;
    (void)keyname_len;
    tickets_t *tk = arg;
    void *data = NULL;
    size_t len = 0;
    if (status != SSL_TICKET_SUCCESS && status != SSL_TICKET_SUCCESS_RENEW)
        return SSL_TICKET_RETURN_IGNORE_RENEW;
    if (SSL_SESSION_get0_ticket_appdata(ss, &data, &len) == 1 && len == sizeof(unsigned) &&
        tk->nused < sizeof(tk->used) / sizeof(tk->used[0]))
        memcpy(&tk->used[tk->nused++], data, sizeof(unsigned));
    return SSL_TICKET_RETURN_USE_RENEW;
}

/* A TLS 1.3 server numbering its tickets into tk, num_tickets per handshake. */
static SSL_CTX *numbered_server_ctx(ca_t *ca, tickets_t *tk, size_t num_tickets)
{
    SSL_CTX *srv = server_ctx(ca, TLS1_3_VERSION);
    assert_int_equal(SSL_CTX_set_session_ticket_cb(srv, on_ticket_gen, on_ticket_dec, tk), 1);
    assert_int_equal(SSL_CTX_set_num_tickets(srv, num_tickets), 1);
    return srv;
}

/* 1 when no ticket number was presented twice. */
static int tickets_used_once(const tickets_t *tk)
{
    for (size_t i = 0; i < tk->nused; i++)
        for (size_t j = i + 1; j < tk->nused; j++)
            if (tk->used[i] == tk->used[j])
                return 0;
    return 1;
}

static void rm_confdir(const char *dir)
{
    static const char *files[] = {CA_FILE_KEY_CERT, CA_FILE_CERT_PEM, CA_FILE_CERT_CER};
    char path[256];
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
}

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof(*f));
    char err[256];
    snprintf(f->dir_good, sizeof(f->dir_good), "/tmp/airlock-test-tls.XXXXXX");
    snprintf(f->dir_bad, sizeof(f->dir_bad), "/tmp/airlock-test-tls.XXXXXX");
    if (mkdtemp(f->dir_good) == NULL || mkdtemp(f->dir_bad) == NULL)
        return -1;
    if (ca_load(&f->good, f->dir_good, CA_CREATE, 0, err, sizeof(err)) != 0 ||
        ca_load(&f->bad, f->dir_bad, CA_CREATE, 0, err, sizeof(err)) != 0)
        return -1;
    snprintf(f->ca_file, sizeof(f->ca_file), "%s/%s", f->dir_good, CA_FILE_CERT_PEM);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    ca_free(f->good);
    ca_free(f->bad);
    rm_confdir(f->dir_good);
    rm_confdir(f->dir_bad);
    free(f);
    return 0;
}

/* A client and a server connection of srv, handshake done and (TLS 1.3) tickets read. */
static void pair_up(const fixture_t *f, SSL_CTX *cli, SSL_CTX *srv, px_tls_t **cp, px_tls_t **sp)
{
    (void)f;
    result_t r = {0};
    px_tls_t *c = client_for(cli, "a.test", 443, &r);
    px_tls_t *s = px_tls_new(srv, 1, NULL);
    assert_non_null(s);
    char serr[256];
    int crc = 0, src = 0;
    for (int i = 0; i < 20 && (crc != 1 || src != 1); i++) {
        if (crc == 0)
            crc = px_tls_handshake(c, r.err, sizeof(r.err));
        shuttle(c, s);
        if (src == 0)
            src = px_tls_handshake(s, serr, sizeof(serr));
        shuttle(s, c);
    }
    assert_int_equal(crc, 1);
    assert_int_equal(src, 1);
    char buf[64];
    assert_int_equal(px_tls_read(c, buf, sizeof(buf)), 0);
    *cp = c;
    *sp = s;
}

/* Received ciphertext lent to TLS (px_tls_lend) in pieces of any size, a record split across
 * lends or several in one, read all at once or a record at a time with the rest kept
 * (px_tls_keep) for the next lend, and buffers given back (px_tls_trim) in the middle of a
 * stream: the plaintext comes out whole and in order. The records of one px_tls_write come out
 * in one buffer. */
static void test_px_tls_lent_ciphertext_in_any_split(void **state)
{
    fixture_t *f = *state;
    static const struct {
        int version;
        size_t piece;     /* ciphertext bytes lent at a time (0: all at once) */
        int reads;        /* px_tls_read calls per lend (0: until it returns 0) */
        size_t trim_each; /* px_tls_trim on both sides after every this many lends (0: never) */
    } cases[] = {
        {TLS1_3_VERSION, 0, 0, 0},      {TLS1_3_VERSION, 1, 0, 0},
        {TLS1_3_VERSION, 5, 0, 7},      {TLS1_3_VERSION, 4099, 0, 3},
        {TLS1_3_VERSION, 16405, 0, 1},  {TLS1_3_VERSION, 65536, 1, 1},
        {TLS1_3_VERSION, 100000, 1, 0}, {TLS1_2_VERSION, 0, 0, 0},
        {TLS1_2_VERSION, 7, 0, 5},      {TLS1_2_VERSION, 65536, 1, 1},
    };
    enum { TOTAL = 300000 };
    char *sent = malloc(TOTAL), *got = malloc(TOTAL + 16384);
    assert_non_null(sent);
    assert_non_null(got);
    for (size_t i = 0; i < TOTAL; i++)
        sent[i] = (char)(i * 31 + i / 7);
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        SSL_CTX *cli = client_ctx(f);
        SSL_CTX *srv = server_ctx(f->good, cases[k].version);
        px_tls_t *c, *s;
        pair_up(f, cli, srv, &c, &s);
        assert_int_equal(px_tls_write(s, sent, 1000), 0); /* a short message first */
        assert_int_equal(px_tls_write(s, sent + 1000, TOTAL - 1000), 0);
        size_t ctlen = 0;
        char *ct = px_tls_take_output(s, &ctlen);
        assert_non_null(ct);
        assert_int_equal(px_tls_output_len(s), 0);
        assert_true(ctlen > TOTAL && ctlen < TOTAL + (TOTAL / 16384 + 2) * 32);
        size_t off = 0, have = 0, lends = 0;
        while (off < ctlen || have < TOTAL) {
            size_t n = cases[k].piece == 0 ? ctlen - off : cases[k].piece;
            if (n > ctlen - off)
                n = ctlen - off;
            px_tls_lend(c, ct + off, n);
            off += n;
            for (int r = 0; cases[k].reads == 0 || r < cases[k].reads; r++) {
                int got_n = px_tls_read(c, got + have, 16384);
                assert_true(got_n >= 0);
                if (got_n == 0)
                    break;
                have += (size_t)got_n;
            }
            assert_int_equal(px_tls_keep(c), 0);
            lends++;
            if (cases[k].trim_each != 0 && lends % cases[k].trim_each == 0) {
                px_tls_trim(c);
                px_tls_trim(s);
            }
            assert_true(lends < 2 * TOTAL); /* no progress would loop */
        }
        assert_int_equal(have, TOTAL);
        assert_memory_equal(got, sent, TOTAL);
        free(ct);
        px_tls_free(c);
        px_tls_free(s);
        SSL_CTX_free(cli);
        SSL_CTX_free(srv);
    }
    free(sent);
    free(got);
}

/* One BIO per connection serves both directions (issue 34's idle memory: a BIO and its lock,
 * ~190 bytes, fewer per TLS connection), and the handshake and data go through it both ways. */
static void test_px_tls_one_bio(void **state)
{
    fixture_t *f = *state;
    SSL_CTX *cli = client_ctx(f);
    SSL_CTX *srv = server_ctx(f->good, TLS1_3_VERSION);
    px_tls_t *c, *s;
    char buf[64];
    pair_up(f, cli, srv, &c, &s);
    assert_ptr_equal(SSL_get_rbio(px_tls_ssl(s)), SSL_get_wbio(px_tls_ssl(s)));
    assert_ptr_equal(SSL_get_rbio(px_tls_ssl(c)), SSL_get_wbio(px_tls_ssl(c)));
    assert_int_equal(px_tls_write(c, "ping", 4), 0);
    shuttle(c, s);
    assert_int_equal(px_tls_read(s, buf, sizeof(buf)), 4);
    assert_memory_equal(buf, "ping", 4);
    assert_int_equal(px_tls_write(s, "pong", 4), 0);
    shuttle(s, c);
    assert_int_equal(px_tls_read(c, buf, sizeof(buf)), 4);
    assert_memory_equal(buf, "pong", 4);
    px_tls_free(c);
    px_tls_free(s);
    SSL_CTX_free(cli);
    SSL_CTX_free(srv);
}

/* The heap an idle server-side connection keeps once its request and response went through and
 * the connection went quiet (px_tls_trim): OpenSSL's SSL object, its session and cipher states;
 * no record buffer, no BIO buffer. mallinfo2() counts glibc's heap, which ASan replaces. */
static void test_px_tls_idle_server_heap(void **state)
{
#if defined(__SANITIZE_ADDRESS__)
    (void)state;
    skip();
#else
    fixture_t *f = *state;
    enum { N = 32 };
    SSL_CTX *cli = client_ctx(f);
    SSL_CTX *srv = server_ctx(f->good, TLS1_3_VERSION);
    px_tls_t *c[N], *s[N];
    static char msg[20000];
    char buf[16384];
    /* one connection first: the leaf certificate, the context's caches */
    pair_up(f, cli, srv, &c[0], &s[0]);
    px_tls_free(c[0]);
    px_tls_free(s[0]);
    malloc_trim(0);
    size_t before = mallinfo2().uordblks;
    for (int i = 0; i < N; i++) {
        pair_up(f, cli, srv, &c[i], &s[i]);
        assert_int_equal(px_tls_write(c[i], msg, 300), 0); /* a request */
        shuttle(c[i], s[i]);
        while (px_tls_read(s[i], buf, sizeof(buf)) > 0)
            ;
        assert_int_equal(px_tls_write(s[i], msg, 300), 0); /* a response: streaming */
        shuttle(s[i], c[i]);
        while (px_tls_read(c[i], buf, sizeof(buf)) > 0)
            ;
        px_tls_trim(s[i]);
        px_tls_free(c[i]);
    }
    size_t per = (mallinfo2().uordblks - before) / N;
    print_message("heap per idle server-side TLS connection: %zu bytes\n", per);
    assert_true(per < 17500); /* 15.0 KB with OpenSSL 3.0.x; 19.4 KB without px_tls_trim */
    for (int i = 0; i < N; i++)
        px_tls_free(s[i]);
    SSL_CTX_free(cli);
    SSL_CTX_free(srv);
#endif
}

static void test_px_tls_resumes_tls13_with_single_use_tickets(void **state)
{
    fixture_t *f = *state;
    SSL_CTX *cli = client_ctx(f);
    tickets_t tk = {0};
    SSL_CTX *srv = numbered_server_ctx(f->good, &tk, 2); /* OpenSSL's default: 2 per handshake */
    result_t r = connect_once(cli, srv, "a.test", 443);
    assert_int_equal(r.done, 1);
    assert_false(r.offered);
    assert_false(r.reused);
    assert_int_equal(px_tls_client_sessions(cli), 2); /* tickets 1, 2 */
    /* each resumption takes the newest ticket out and adds the one it receives (OpenSSL
     * servers send one after a resumption) */
    for (unsigned i = 0; i < 4; i++) {
        r = connect_once(cli, srv, "a.test", 443);
        assert_int_equal(r.done, 1);
        assert_true(r.offered);
        assert_true(r.reused);
        assert_int_equal(tk.nused, i + 1);
        assert_int_equal(tk.used[i], 2 + i);
        assert_int_equal(px_tls_client_sessions(cli), 2); /* ticket 1 and the newest */
    }
    /* abandoned before any byte: a resumption that never finished forgets all the tickets */
    px_tls_t *c = client_for(cli, "a.test", 443, &r);
    assert_true(r.offered);
    assert_int_equal(px_tls_client_sessions(cli), 1);
    px_tls_free(c);
    assert_int_equal(px_tls_client_sessions(cli), 0);
    r = connect_once(cli, srv, "a.test", 443);
    assert_int_equal(r.done, 1);
    assert_false(r.offered);
    assert_false(r.reused);
    assert_int_equal(px_tls_client_sessions(cli), 2);
    assert_true(tickets_used_once(&tk));
    SSL_CTX_free(srv);
    SSL_CTX_free(cli);
}

static void test_px_tls_concurrent_tls13_resume_up_to_stored_tickets(void **state)
{
    fixture_t *f = *state;
    SSL_CTX *cli = client_ctx(f);
    tickets_t tk = {0};
    /* more tickets than kept: the newest PX_TLS_TICKETS_PER_KEY stay (3..6) */
    SSL_CTX *srv = numbered_server_ctx(f->good, &tk, PX_TLS_TICKETS_PER_KEY + 2);
    result_t r = connect_once(cli, srv, "a.test", 443);
    assert_int_equal(r.done, 1);
    assert_int_equal(tk.issued, PX_TLS_TICKETS_PER_KEY + 2);
    assert_int_equal(px_tls_client_sessions(cli), PX_TLS_TICKETS_PER_KEY);
    r = connect_once(cli, srv, "b.test", 443); /* another key, left alone */
    assert_int_equal(r.done, 1);
    size_t other = px_tls_client_sessions(cli) - PX_TLS_TICKETS_PER_KEY;
    assert_int_equal(other, PX_TLS_TICKETS_PER_KEY);
    unsigned a_newest = PX_TLS_TICKETS_PER_KEY + 2;
    unsigned first_b = tk.issued - PX_TLS_TICKETS_PER_KEY - 1;
    tk.issued = 100; /* tickets of the connections below: 101 on */

    /* N connections start before any finishes: one ticket each, newest first, then none */
    enum { N = PX_TLS_TICKETS_PER_KEY + 2 };
    px_tls_t *c[N];
    result_t rs[N];
    for (size_t i = 0; i < N; i++) {
        memset(&rs[i], 0, sizeof(rs[i]));
        c[i] = client_for(cli, "a.test", 443, &rs[i]);
        assert_int_equal(rs[i].offered, i < PX_TLS_TICKETS_PER_KEY);
    }
    assert_int_equal(px_tls_client_sessions(cli), other);
    for (size_t i = 0; i < N; i++) {
        drive(c[i], cli, srv, &rs[i]);
        assert_int_equal(rs[i].done, 1);
        assert_int_equal(rs[i].reused, i < PX_TLS_TICKETS_PER_KEY);
    }
    assert_int_equal(tk.nused, PX_TLS_TICKETS_PER_KEY);
    for (size_t i = 0; i < PX_TLS_TICKETS_PER_KEY; i++)
        assert_int_equal(tk.used[i], a_newest - i);
    assert_true(tickets_used_once(&tk));
    assert_int_equal(px_tls_client_sessions(cli), other + PX_TLS_TICKETS_PER_KEY);
    /* the other key still resumes with its own newest ticket */
    r = connect_once(cli, srv, "b.test", 443);
    assert_true(r.reused);
    assert_int_equal(tk.used[tk.nused - 1], first_b + PX_TLS_TICKETS_PER_KEY + 1);
    assert_true(tickets_used_once(&tk));
    SSL_CTX_free(srv);
    SSL_CTX_free(cli);
}

/* Fills a.test:443 and b.test:443 with TLS 1.3 tickets from srv (3 per full handshake, 1
 * after a resumption): 3 each. */
static void fill_two_keys(SSL_CTX *cli, SSL_CTX *srv)
{
    result_t r = connect_once(cli, srv, "a.test", 443);
    assert_int_equal(r.done, 1);
    r = connect_once(cli, srv, "a.test", 443);
    assert_true(r.reused);
    r = connect_once(cli, srv, "b.test", 443);
    assert_int_equal(r.done, 1);
    assert_int_equal(px_tls_client_sessions(cli), 6);
}

static void test_px_tls_failure_forgets_all_tickets_of_key_only(void **state)
{
    fixture_t *f = *state;
    SSL_CTX *cli = client_ctx(f);
    tickets_t tk = {0};
    SSL_CTX *srv = numbered_server_ctx(f->good, &tk, 3);
    SSL_CTX *evil = server_ctx(f->bad, TLS1_3_VERSION);
    fill_two_keys(cli, srv);
    result_t r = connect_once(cli, evil, "a.test", 443);
    assert_true(r.offered);
    assert_true(r.done < 0);
    assert_non_null(strstr(r.err, "certificate verify failed"));
    assert_int_equal(r.kept, 3); /* a's other two tickets gone at once, b's three stay */
    r = connect_once(cli, srv, "a.test", 443);
    assert_false(r.offered);
    assert_false(r.reused);
    r = connect_once(cli, srv, "b.test", 443);
    assert_true(r.offered);
    assert_true(r.reused);
    assert_true(tickets_used_once(&tk));
    SSL_CTX_free(evil);
    SSL_CTX_free(srv);
    SSL_CTX_free(cli);
}

static void test_px_tls_abandoned_forgets_all_tickets_of_key_only(void **state)
{
    fixture_t *f = *state;
    SSL_CTX *cli = client_ctx(f);
    tickets_t tk = {0};
    SSL_CTX *srv = numbered_server_ctx(f->good, &tk, 3);
    fill_two_keys(cli, srv);
    /* the ClientHello went out, the handshake never finished (peer vanished, timeout) */
    result_t r = {0};
    px_tls_t *c = client_for(cli, "a.test", 443, &r);
    assert_true(r.offered);
    char err[256];
    assert_int_equal(px_tls_handshake(c, err, sizeof(err)), 0);
    assert_int_equal(px_tls_client_sessions(cli), 5);
    px_tls_free(c);
    assert_int_equal(px_tls_client_sessions(cli), 3); /* b's */
    r = connect_once(cli, srv, "a.test", 443);
    assert_false(r.offered);
    r = connect_once(cli, srv, "b.test", 443);
    assert_true(r.reused);
    assert_true(tickets_used_once(&tk));
    SSL_CTX_free(srv);
    SSL_CTX_free(cli);
}

static void test_px_tls_tls12_one_session_shared_by_concurrent(void **state)
{
    fixture_t *f = *state;
    SSL_CTX *cli = client_ctx(f);
    SSL_CTX *srv13 = server_ctx(f->good, TLS1_3_VERSION);
    SSL_CTX *srv = server_ctx(f->good, TLS1_2_VERSION);
    result_t r = connect_once(cli, srv13, "a.test", 443);
    assert_int_equal(px_tls_client_sessions(cli), 2);
    /* the server moved to TLS 1.2: its session replaces the key's tickets */
    r = connect_once(cli, srv, "a.test", 443);
    assert_true(r.offered);
    assert_false(r.reused);
    assert_int_equal(r.done, 1);
    assert_int_equal(px_tls_client_sessions(cli), 1);
    px_tls_t *c[3];
    result_t rs[3];
    for (size_t i = 0; i < 3; i++) {
        memset(&rs[i], 0, sizeof(rs[i]));
        c[i] = client_for(cli, "a.test", 443, &rs[i]);
        assert_true(rs[i].offered); /* the same session for all of them, kept */
    }
    assert_int_equal(px_tls_client_sessions(cli), 1);
    for (size_t i = 0; i < 3; i++) {
        drive(c[i], cli, srv, &rs[i]);
        assert_true(rs[i].reused);
        assert_int_equal(px_tls_client_sessions(cli), 1);
    }
    /* and back to TLS 1.3: its tickets replace the session */
    r = connect_once(cli, srv13, "a.test", 443);
    assert_int_equal(r.done, 1);
    assert_false(r.reused);
    assert_int_equal(px_tls_client_sessions(cli), 2);
    SSL_CTX_free(srv);
    SSL_CTX_free(srv13);
    SSL_CTX_free(cli);
}

static void test_px_tls_resumes_tls12_session_many_times(void **state)
{
    fixture_t *f = *state;
    SSL_CTX *cli = client_ctx(f);
    SSL_CTX *srv = server_ctx(f->good, TLS1_2_VERSION);
    result_t r = connect_once(cli, srv, "a.test", 443);
    assert_int_equal(r.done, 1);
    assert_false(r.reused);
    for (int i = 0; i < 3; i++) {
        /* kept in the store while in use, and still resumable after a close without
         * close_notify (airlock never sends one upstream) */
        r = connect_once(cli, srv, "a.test", 443);
        assert_int_equal(r.done, 1);
        assert_true(r.offered);
        assert_true(r.reused);
        assert_int_equal(px_tls_client_sessions(cli), 1);
    }
    SSL_CTX_free(srv);
    SSL_CTX_free(cli);
}

/* Ticket keys of a server that accepts its tickets but always issues a new one on resumption
 * (what servers do when they rotate keys). */
static int on_ticket_key_renew(SSL *s, unsigned char key_name[16], unsigned char *iv,
                               EVP_CIPHER_CTX *cctx, EVP_MAC_CTX *hctx, int enc)
{
    (void)s;
    static const unsigned char name[16] = "airlock-test-tk";
    static const unsigned char aes[16] = {1};
    static unsigned char hmac[32] = {2};
    static char digest[] = "SHA256";
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, hmac, sizeof(hmac)),
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
        OSSL_PARAM_construct_end(),
    };
    if (enc) {
        memcpy(key_name, name, 16);
        if (RAND_bytes(iv, 16) != 1 ||
            EVP_EncryptInit_ex(cctx, EVP_aes_128_cbc(), NULL, aes, iv) != 1 ||
            EVP_MAC_CTX_set_params(hctx, params) != 1)
            return -1;
        return 1;
    }
    if (memcmp(key_name, name, 16) != 0)
        return 0;
    if (EVP_DecryptInit_ex(cctx, EVP_aes_128_cbc(), NULL, aes, iv) != 1 ||
        EVP_MAC_CTX_set_params(hctx, params) != 1)
        return -1;
    return 2; /* valid, renew */
}

static void test_px_tls_keeps_renewed_tls12_ticket(void **state)
{
    fixture_t *f = *state;
    SSL_CTX *cli = client_ctx(f);
    SSL_CTX *srv = server_ctx(f->good, TLS1_2_VERSION);
    SSL_CTX_set_tlsext_ticket_key_evp_cb(srv, on_ticket_key_renew);
    result_t r = connect_once(cli, srv, "a.test", 443);
    assert_int_equal(r.done, 1);
    assert_false(r.reused);
    for (int i = 0; i < 3; i++) {
        /* each resumption replaces the offered ticket (which OpenSSL then marks spent) */
        r = connect_once(cli, srv, "a.test", 443);
        assert_int_equal(r.done, 1);
        assert_true(r.offered);
        assert_true(r.reused);
        assert_int_equal(px_tls_client_sessions(cli), 1);
    }
    SSL_CTX_free(srv);
    SSL_CTX_free(cli);
}

static void test_px_tls_never_offers_another_name_or_port(void **state)
{
    fixture_t *f = *state;
    static const int versions[] = {TLS1_2_VERSION, TLS1_3_VERSION};
    for (size_t v = 0; v < 2; v++) {
        SSL_CTX *cli = client_ctx(f);
        /* one server for every name: it would resume a session across names and ports */
        SSL_CTX *srv = server_ctx(f->good, versions[v]);
        SSL_CTX_set_num_tickets(srv, 1); /* one session per key in both versions */
        result_t r = connect_once(cli, srv, "a.test", 443);
        assert_int_equal(r.done, 1);
        r = connect_once(cli, srv, "b.test", 443);
        assert_int_equal(r.done, 1);
        assert_false(r.offered);
        assert_false(r.reused);
        r = connect_once(cli, srv, "a.test", 8443);
        assert_int_equal(r.done, 1);
        assert_false(r.offered);
        assert_false(r.reused);
        px_tls_t *c = client_for(cli, "A.test", 443, &r); /* the exact string only */
        assert_false(r.offered);
        px_tls_free(c);
        r = connect_once(cli, srv, "127.0.0.1", 443);
        assert_int_equal(r.done, 1);
        assert_false(r.offered);
        r = connect_once(cli, srv, "127.0.0.1", 443);
        assert_true(r.offered);
        assert_true(r.reused);
        r = connect_once(cli, srv, "a.test", 443);
        assert_true(r.offered);
        assert_true(r.reused);
        assert_int_equal(px_tls_client_sessions(cli), 4); /* a:443, b:443, a:8443, 127.0.0.1 */
        SSL_CTX_free(srv);
        SSL_CTX_free(cli);
    }
}

static void test_px_tls_refused_resumption_still_verifies(void **state)
{
    fixture_t *f = *state;
    static const int versions[] = {TLS1_2_VERSION, TLS1_3_VERSION};
    for (size_t v = 0; v < 2; v++) {
        SSL_CTX *cli = client_ctx(f);
        SSL_CTX *srv = server_ctx(f->good, versions[v]);
        /* same name, an untrusted certificate, other ticket keys: refuses the session */
        SSL_CTX *evil = server_ctx(f->bad, versions[v]);
        result_t r = connect_once(cli, srv, "a.test", 443);
        assert_int_equal(r.done, 1);
        r = connect_once(cli, evil, "a.test", 443);
        assert_true(r.offered);
        assert_true(r.done < 0);
        assert_non_null(strstr(r.err, "certificate verify failed"));
        assert_int_equal(r.kept, 0); /* forgotten at once, not only when the connection goes */
        assert_int_equal(px_tls_client_sessions(cli), 0);
        r = connect_once(cli, evil, "a.test", 443);
        assert_false(r.offered);
        assert_true(r.done < 0);
        r = connect_once(cli, srv, "a.test", 443);
        assert_int_equal(r.done, 1);
        assert_false(r.offered);
        assert_false(r.reused);
        SSL_CTX_free(evil);
        SSL_CTX_free(srv);
        SSL_CTX_free(cli);
    }
}

static void test_px_tls_abandoned_resumption_forgets_session(void **state)
{
    fixture_t *f = *state;
    SSL_CTX *cli = client_ctx(f);
    SSL_CTX *srv = server_ctx(f->good, TLS1_2_VERSION);
    result_t r = connect_once(cli, srv, "a.test", 443);
    assert_int_equal(r.done, 1);
    assert_int_equal(px_tls_client_sessions(cli), 1);
    /* the ClientHello went out, the handshake never finished (peer vanished, timeout) */
    px_tls_t *c = client_for(cli, "a.test", 443, &r);
    assert_true(r.offered);
    char err[256];
    assert_int_equal(px_tls_handshake(c, err, sizeof(err)), 0);
    px_tls_free(c);
    assert_int_equal(px_tls_client_sessions(cli), 0);
    SSL_CTX_free(srv);
    SSL_CTX_free(cli);
}

static void test_px_tls_store_only_on_client_contexts(void **state)
{
    fixture_t *f = *state;
    SSL_CTX *srv = server_ctx(f->good, TLS1_3_VERSION);
    assert_int_equal(px_tls_client_sessions(srv), 0);
    SSL_CTX *cli = client_ctx(f);
    /* a server-side connection never touches the store */
    result_t r = connect_once(cli, srv, "a.test", 443);
    assert_int_equal(r.done, 1);
    assert_int_equal(px_tls_client_sessions(srv), 0);
    assert_int_equal(px_tls_client_sessions(cli), 2); /* the server's two tickets */
    SSL_CTX_free(cli); /* frees the remembered sessions with the context */
    SSL_CTX_free(srv);
}

/* Key exchange: only X25519, P-256 and P-384 on both legs. A client offering only finite-field
 * groups (cheap to replay, ~100 ms of CPU each for the server) is refused; one offering a
 * mix or one of ours succeeds (possibly after a HelloRetryRequest). */
static void test_px_tls_groups_ecdhe_only(void **state)
{
    fixture_t *f = *state;
    static const struct {
        const char *client_groups;
        int max_version;
        int ok;
    } cases[] = {
        {"ffdhe2048", TLS1_3_VERSION, 0},
        {"ffdhe8192", TLS1_3_VERSION, 0},
        {"ffdhe2048:ffdhe3072:ffdhe4096:ffdhe6144:ffdhe8192", TLS1_3_VERSION, 0},
        {"X25519", TLS1_3_VERSION, 1},
        {"P-256", TLS1_3_VERSION, 1},
        {"P-384", TLS1_3_VERSION, 1},
        {"P-521", TLS1_3_VERSION, 0},
        {"ffdhe8192:P-256", TLS1_3_VERSION, 1}, /* HelloRetryRequest to P-256 */
        {"X448:X25519", TLS1_3_VERSION, 1},
        {"X25519:P-256", TLS1_2_VERSION, 1}, /* TLS 1.2: P-256 also names the leaf's curve */
        {"ffdhe2048", TLS1_2_VERSION, 0},    /* no DHE suite is ever picked: no parameters */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        SSL_CTX *srv = server_ctx(f->good, TLS1_3_VERSION);
        SSL_CTX *cli = client_ctx(f);
        assert_int_equal(SSL_CTX_set1_groups_list(cli, cases[i].client_groups), 1);
        SSL_CTX_set_max_proto_version(cli, cases[i].max_version);
        result_t r = connect_once(cli, srv, "a.test", 443);
        if ((r.done == 1) != cases[i].ok)
            fail_msg("groups %s (max %x): handshake %d, want %s", cases[i].client_groups,
                     cases[i].max_version, r.done, cases[i].ok ? "success" : "failure");
        SSL_CTX_free(srv);
        SSL_CTX_free(cli);
    }
    /* the upstream leg offers only ours: a server that accepts only ffdhe fails */
    SSL_CTX *srv = server_ctx(f->good, TLS1_3_VERSION);
    assert_int_equal(SSL_CTX_set1_groups_list(srv, "ffdhe2048"), 1);
    SSL_CTX *cli = client_ctx(f);
    result_t r = connect_once(cli, srv, "a.test", 443);
    assert_true(r.done < 0);
    SSL_CTX_free(srv);
    SSL_CTX_free(cli);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_px_tls_resumes_tls13_with_single_use_tickets),
        cmocka_unit_test(test_px_tls_concurrent_tls13_resume_up_to_stored_tickets),
        cmocka_unit_test(test_px_tls_failure_forgets_all_tickets_of_key_only),
        cmocka_unit_test(test_px_tls_abandoned_forgets_all_tickets_of_key_only),
        cmocka_unit_test(test_px_tls_tls12_one_session_shared_by_concurrent),
        cmocka_unit_test(test_px_tls_resumes_tls12_session_many_times),
        cmocka_unit_test(test_px_tls_keeps_renewed_tls12_ticket),
        cmocka_unit_test(test_px_tls_never_offers_another_name_or_port),
        cmocka_unit_test(test_px_tls_refused_resumption_still_verifies),
        cmocka_unit_test(test_px_tls_abandoned_resumption_forgets_session),
        cmocka_unit_test(test_px_tls_store_only_on_client_contexts),
        cmocka_unit_test(test_px_tls_groups_ecdhe_only),
        cmocka_unit_test(test_px_tls_lent_ciphertext_in_any_split),
        cmocka_unit_test(test_px_tls_one_bio),
        cmocka_unit_test(test_px_tls_idle_server_heap),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
