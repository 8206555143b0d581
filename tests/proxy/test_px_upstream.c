/* The upstream client (px_upstream.c, px_upconn.c, px_uph1.c) against a plain HTTP/1.1 server
 * on loopback, in this process: an owner that sends its next request from inside the end of
 * the last one (as the secret fetcher does when one source's answer starts the next), and the
 * bytes an upstream sends after a complete response. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <uv.h>

#include "dns/dns_resolve.h"
#include "http/px_msg.h"
#include "net/px_loop.h"
#include "proxy/px_config.h"
#include "proxy/px_upstream.h"

/* ---- the server: answers each request head with 200 "ok", keep-alive ------------------------ */

typedef struct srv_conn {
    uv_tcp_t tcp;
    char in[4096];
    size_t len;
    int answered;
} srv_conn_t;

typedef struct fx {
    uv_loop_t uv;
    px_loop_t loop;
    px_config_t cfg;
    dns_resolver_t *resolver;
    px_upmgr_t *up;
    uv_tcp_t listener;
    uint16_t port;
    uv_timer_t deadline;
    int accepted;
    const char *extra; /* sent right after the first response, on the same write */
    srv_conn_t *conns[8];
    /* the owner's side */
    int requests, statuses[4], ends, errors;
    char bodies[4][16];
    char why[256];
    px_upreq_t *r;
} fx_t;

static fx_t *fx;

static void on_srv_alloc(uv_handle_t *h, size_t size, uv_buf_t *buf)
{
    srv_conn_t *c = h->data;
    (void)size;
    buf->base = c->in + c->len;
    buf->len = sizeof(c->in) - c->len;
}

static void on_srv_written(uv_write_t *w, int status)
{
    (void)status;
    free(w);
}

static void srv_send(srv_conn_t *c, const char *text)
{
    size_t n = strlen(text);
    uv_write_t *w = malloc(sizeof(*w) + n);
    assert_non_null(w);
    memcpy(w + 1, text, n);
    uv_buf_t b = uv_buf_init((char *)(w + 1), (unsigned)n);
    assert_int_equal(uv_write(w, (uv_stream_t *)&c->tcp, &b, 1, on_srv_written), 0);
}

static void on_srv_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    srv_conn_t *c = s->data;
    (void)buf;
    if (n < 0) {
        uv_read_stop(s);
        return;
    }
    c->len += (size_t)n;
    char *end;
    while ((end = memmem(c->in, c->len, "\r\n\r\n", 4)) != NULL) {
        size_t used = (size_t)(end + 4 - c->in);
        memmove(c->in, c->in + used, c->len - used);
        c->len -= used;
        char resp[256];
        snprintf(resp, sizeof(resp), "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok%s",
                 c->answered++ == 0 && fx->extra != NULL ? fx->extra : "");
        srv_send(c, resp);
    }
}

static void on_srv_conn(uv_stream_t *l, int status)
{
    assert_int_equal(status, 0);
    assert_true(fx->accepted < 8);
    srv_conn_t *c = calloc(1, sizeof(*c));
    assert_non_null(c);
    uv_tcp_init(&fx->uv, &c->tcp);
    c->tcp.data = c;
    assert_int_equal(uv_accept(l, (uv_stream_t *)&c->tcp), 0);
    fx->conns[fx->accepted++] = c;
    uv_read_start((uv_stream_t *)&c->tcp, on_srv_alloc, on_srv_read);
}

/* ---- the owner ------------------------------------------------------------------------------ */

static const px_up_cbs_t owner_cbs;

static px_upreq_t *send_get(void)
{
    addon_req_t *h = calloc(1, sizeof(*h));
    assert_non_null(h);
    h->method = (addon_str_t){"GET", 3};
    h->path = (addon_str_t){"/", 1};
    h->headers[0].name = (addon_str_t){"Host", 4};
    h->headers[0].value = (addon_str_t){"127.0.0.1", 9};
    h->nheaders = 1;
    px_upreq_t *r =
        px_up_open(fx->up, "127.0.0.1", fx->port, 0, h, PX_UP_BODY_NONE, 0, &owner_cbs, fx);
    free(h);
    assert_non_null(r);
    px_up_end(r, NULL);
    fx->requests++;
    return r;
}

static void on_o_head(void *owner, px_msg_t *m)
{
    (void)owner;
    fx->statuses[fx->requests - 1] = m->status;
    px_msg_free(m);
}

static void on_o_data(void *owner, const char *data, size_t len)
{
    (void)owner;
    char *b = fx->bodies[fx->requests - 1];
    size_t have = strlen(b);
    if (have + len < sizeof(fx->bodies[0]))
        memcpy(b + have, data, len);
}

static void on_o_end(void *owner, const px_fields_t *t)
{
    (void)owner, (void)t;
    fx->ends++;
    px_up_done(fx->r);
    fx->r = NULL;
    if (fx->requests == 1)
        fx->r = send_get(); /* the next request, from inside the end of this one */
    else
        uv_timer_stop(&fx->deadline);
}

static void on_o_error(void *owner, const char *why)
{
    (void)owner;
    fx->errors++;
    snprintf(fx->why, sizeof(fx->why), "%s", why);
    fx->r = NULL;
    uv_timer_stop(&fx->deadline);
}

static void on_o_drain(void *owner)
{
    (void)owner;
}

static const px_up_cbs_t owner_cbs = {.on_head = on_o_head,
                                      .on_data = on_o_data,
                                      .on_end = on_o_end,
                                      .on_error = on_o_error,
                                      .on_drain = on_o_drain};

/* ---- set-up ------------------------------------------------------------------------------- */

static void on_deadline(uv_timer_t *t)
{
    (void)t;
    fail_msg("no answer within 5 s");
}

static void fx_setup(void)
{
    fx = calloc(1, sizeof(*fx));
    assert_non_null(fx);
    assert_int_equal(uv_loop_init(&fx->uv), 0);
    assert_int_equal(px_loop_init(&fx->loop, &fx->uv), 0);
    px_config_defaults(&fx->cfg);
    assert_int_equal(px_cidr_parse(&fx->cfg.allow_cidrs[0], "127.0.0.0/8"), 0);
    fx->cfg.n_allow_cidrs = 1;
    /* never asked: the host is an address */
    assert_int_equal(dns_resolver_create(&fx->uv, "127.0.0.1:9", &fx->resolver), 0);
    fx->up = px_upmgr_new(&fx->loop, &fx->cfg, fx->resolver, NULL);
    assert_non_null(fx->up);
    struct sockaddr_in sa;
    uv_ip4_addr("127.0.0.1", 0, &sa);
    uv_tcp_init(&fx->uv, &fx->listener);
    assert_int_equal(uv_tcp_bind(&fx->listener, (const struct sockaddr *)&sa, 0), 0);
    assert_int_equal(uv_listen((uv_stream_t *)&fx->listener, 8, on_srv_conn), 0);
    int sl = sizeof(sa);
    assert_int_equal(uv_tcp_getsockname(&fx->listener, (struct sockaddr *)&sa, &sl), 0);
    fx->port = ntohs(sa.sin_port);
    uv_timer_init(&fx->uv, &fx->deadline);
}

static void on_srv_closed(uv_handle_t *h)
{
    free(h->data);
}

static void fx_teardown(void)
{
    px_upmgr_close_idle(fx->up);
    for (int i = 0; i < fx->accepted; i++)
        uv_close((uv_handle_t *)&fx->conns[i]->tcp, on_srv_closed);
    uv_close((uv_handle_t *)&fx->listener, NULL);
    uv_close((uv_handle_t *)&fx->deadline, NULL);
    dns_resolver_close(fx->resolver, NULL, NULL);
    uv_run(&fx->uv, UV_RUN_DEFAULT);
    px_upmgr_free(fx->up);
    px_loop_close(&fx->loop);
    uv_run(&fx->uv, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&fx->uv), 0);
    free(fx);
    fx = NULL;
}

static void run_two_requests(void)
{
    uv_timer_start(&fx->deadline, on_deadline, 5000, 0);
    fx->r = send_get();
    while (uv_is_active((uv_handle_t *)&fx->deadline))
        uv_run(&fx->uv, UV_RUN_ONCE);
}

/* ---- the cases --------------------------------------------------------------------------------
 */

/* The first request's end sends the second; the connection the first used is not handed to it
 * while its bytes are still being read, and both get their whole answer. */
static void test_next_request_from_on_end(void **state)
{
    (void)state;
    fx_setup();
    run_two_requests();
    assert_int_equal(fx->errors, 0);
    assert_int_equal(fx->ends, 2);
    assert_int_equal(fx->statuses[0], 200);
    assert_int_equal(fx->statuses[1], 200);
    assert_string_equal(fx->bodies[0], "ok");
    assert_string_equal(fx->bodies[1], "ok");
    fx_teardown();
}

/* Bytes after a complete response: that connection is not reused, so the second request,
 * sent from inside the first one's end, gets a connection of its own and a clean answer. */
static void test_bytes_after_a_response_are_nobody_s(void **state)
{
    (void)state;
    fx_setup();
    fx->extra = "HTTP/1.1 500 Stray\r\nContent-Length: 0\r\n\r\n";
    run_two_requests();
    assert_int_equal(fx->errors, 0);
    assert_int_equal(fx->ends, 2);
    assert_int_equal(fx->statuses[1], 200);
    assert_string_equal(fx->bodies[1], "ok");
    assert_int_equal(fx->accepted, 2);
    fx_teardown();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_next_request_from_on_end),
        cmocka_unit_test(test_bytes_after_a_response_are_nobody_s),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
