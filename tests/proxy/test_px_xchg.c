/* The exchange (proxy/px_xchg.h) in process, table-driven: no root, no network, no real
 * upstream. A request head is parsed from text and pre-checked as a client connection would;
 * the exchange runs on a real libuv loop with a policy snapshot loaded from YAML/JSON text and a
 * network log in a temp file; the upstream is tests/proxy/fake_upstream.c (link-time
 * substitution of px_upstream.h) and the client side is a recording px_down_ops_t. Each case is
 * a script of client and upstream events, then what each side must have seen and the log line.
 *
 * Only the public API is used (px_xchg.h, px_upstream.h, px_log.h, px_policy.h, px_ctx.h):
 * the stages inside the exchange may move without breaking these. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cmocka.h>

#include "addons/addon_budget.h"
#include "proxy/px_ctx.h"
#include "http/px_h1.h"
#include "proxy/px_log.h"
#include "proxy/px_policy.h"
#include "proxy/px_precheck.h"
#include "proxy/px_upstream.h"
#include "proxy/px_xchg.h"

#include "fake_upstream.c"
#include "fake_down.c"
#include "fake_env.c"

#define POLICY_DEFAULT                                                                             \
    "domains:\n"                                                                                   \
    "  - allowed.example\n"                                                                        \
    "url_prefixes:\n"                                                                              \
    "  - host: api.github.com\n"                                                                   \
    "    path: /graphql\n"                                                                         \
    "    methods: [POST]\n"                                                                        \
    "    graphql:\n"                                                                               \
    "      queries: [\"*\"]\n"

#define REAL_SECRET "REAL-secret-value-0123456789"
#define SURROGATE "surrogate-token-0123456789abcdef"
#define CANARY "CANARY-7f3a9b2c4d5e6f70a1"

/* A masked credential for allowed.example (Authorization) and a canary. */
#define REPL_DEFAULT                                                                               \
    "{\"" SURROGATE "\": {\"value\": \"" REAL_SECRET "\", \"scopes\": [\"allowed.example\"],"      \
    " \"headers\": [\"Authorization\"]},"                                                          \
    " \"canaries\": [{\"name\": \"planted-marker\", \"value\": \"" CANARY "\"}]}"

/* ---- the script ------------------------------------------------------------------------------ */

typedef enum op {
    END_OF_SCRIPT = 0,
    C_BODY,          /* the client sends body bytes s */
    C_END,           /* the client's body ends (trailers s, may be NULL) */
    C_DRAIN,         /* the client's queue drained */
    C_FULL,          /* the client's queue is full (n) */
    C_ABORT,         /* the client went away (reason s) */
    C_BROKEN,        /* the client's body framing broke (reason s) */
    WAIT,            /* n ms pass (the exchange's timers may fire) */
    SET_UPSTREAM_MS, /* the upstream idle timeout is n ms from now on */
    U_READY,         /* the upstream connected and sent the head */
    U_HEAD,          /* the upstream answers head s */
    U_DATA,          /* response body bytes s */
    U_END,           /* the response ends (trailers s, may be NULL) */
    U_ERROR,         /* the upstream failed (why s) */
    U_FULL,          /* the upstream's queue is full (n) */
    U_DRAIN,         /* ... and drained */
    CHECK_PAUSES,    /* the client's body was paused/resumed as s says so far */
    CHECK_UP_PAUSED, /* the response is paused (n) */
} op_t;

typedef struct step {
    op_t op;
    const char *s;
    int n;
} step_t;

static void step_run(const step_t *st)
{
    px_fields_t t;
    if (st->op >= C_BODY && st->op <= C_BROKEN && st->op != C_FULL)
        assert_false(fx->down.gone); /* the exchange is freed: the client calls it no more */
    switch (st->op) {
    case C_BODY:
        px_xchg_body(fx->x, st->s, strlen(st->s));
        break;
    case C_END:
        if (st->s != NULL)
            make_fields(&t, st->s);
        px_xchg_body_end(fx->x, st->s != NULL ? &t : NULL);
        break;
    case C_DRAIN:
        fx->down.full = 0;
        px_xchg_drain(fx->x);
        break;
    case C_FULL:
        fx->down.full = st->n;
        break;
    case C_BROKEN:
        px_xchg_body_error(fx->x, st->s);
        break;
    case SET_UPSTREAM_MS:
        fx->cfg.upstream_first_byte_ms = (uint64_t)st->n;
        break;
    case WAIT:
        usleep((useconds_t)st->n * 1000);
        uv_update_time(&fx->uv);
        break;
    case C_ABORT:
        px_xchg_abort(fx->x, st->s);
        fx->down.gone = 1;
        break;
    case U_READY:
        fake_up_live(&fake_up);
        if (fake_up.cbs->on_ready != NULL)
            fake_up.cbs->on_ready(fake_up.owner);
        break;
    case U_HEAD:
        fake_up_live(&fake_up);
        fake_up.cbs->on_head(fake_up.owner, parse_head(st->s, 0, fake_up.is_head));
        break;
    case U_DATA:
        fake_up_live(&fake_up);
        fake_up.cbs->on_data(fake_up.owner, st->s, strlen(st->s));
        break;
    case U_END:
        fake_up_live(&fake_up);
        if (st->s != NULL)
            make_fields(&t, st->s);
        fake_up.cbs->on_end(fake_up.owner, st->s != NULL ? &t : NULL);
        break;
    case U_ERROR:
        fake_up_error(st->s);
        break;
    case U_FULL:
        fake_up.full = st->n;
        break;
    case U_DRAIN:
        fake_up_live(&fake_up);
        fake_up.full = 0;
        fake_up.cbs->on_drain(fake_up.owner);
        break;
    case CHECK_PAUSES:
        assert_string_equal(fx->down.pauses, st->s);
        break;
    case CHECK_UP_PAUSED:
        assert_int_equal(fake_up.paused, st->n);
        break;
    case END_OF_SCRIPT:
        break;
    }
}

/* ---- the cases ------------------------------------------------------------------------------- */

enum { FIN_NONE = 0, FIN_REUSE, FIN_CLOSE, FIN_NOW }; /* finished(1), (0), (-1) */

typedef struct xcase {
    const char *name;
    const char *policy;              /* NULL: POLICY_DEFAULT */
    const char *repl;                /* NULL: none */
    int tls;                         /* came over TLS (SNI = the Host) */
    const char *sni;                 /* ... unless this SNI is given */
    uint64_t client_ms, upstream_ms; /* the idle timeouts (0: the defaults) */
    const char *req;                 /* the request head */
    step_t steps[16];
    /* the upstream */
    int opened;
    const char *up_head; /* lines that must be in its head, in this order */
    const char *up_not;  /* ... and lines that must not be (each a prefix) */
    int up_body_mode;
    const char *up_body;
    int up_ended;
    const char *up_trailers;
    int up_aborted, up_done;
    /* the client */
    const char *interim;
    int status;
    int body_mode;
    int close;
    const char *down_body;   /* exact (NULL: not checked) */
    const char *down_json;   /* airlock's own answer: a JSON body holding this */
    const char *down_fields; /* lines that must be in the final head */
    const char *down_trailers;
    const char *pauses;
    int cut; /* the response was cut: no end */
    int fin;
    /* the log, whole (one line per exchange) */
    const char *log;
} xcase_t;

static void case_check(const xcase_t *c)
{
    const fake_down_t *d = &fx->down;
    assert_int_equal(fake_up.opened, c->opened);
    if (c->opened) {
        assert_lines_in(fake_up.head, c->up_head, "upstream head");
        assert_no_line(fake_up.head, c->up_not, "upstream head");
        assert_int_equal(fake_up.body_mode, c->up_body_mode);
        assert_int_equal(fake_up.body_len, strlen(c->up_body != NULL ? c->up_body : ""));
        assert_memory_equal(fake_up.body, c->up_body != NULL ? c->up_body : "", fake_up.body_len);
        assert_int_equal(fake_up.data_after_end, 0);
    }
    assert_int_equal(fake_up.ended, c->up_ended);
    assert_string_equal(fake_up.trailers, c->up_trailers != NULL ? c->up_trailers : "");
    assert_int_equal(fake_up.aborted, c->up_aborted);
    assert_int_equal(fake_up.done, c->up_done);
    assert_string_equal(d->interim, c->interim != NULL ? c->interim : "");
    assert_int_equal(d->status, c->status);
    if (c->status != 0) {
        assert_int_equal(d->body_mode, c->body_mode);
        assert_int_equal(d->close, c->close);
        if (c->body_mode == PX_RESP_LENGTH && c->fin == FIN_REUSE)
            assert_int_equal(d->length, d->body_len); /* what was said is what came */
    }
    if (c->down_body != NULL) {
        assert_int_equal(d->body_len, strlen(c->down_body));
        assert_memory_equal(d->body, c->down_body, d->body_len);
    }
    if (c->down_json != NULL) {
        assert_string_equal(d->ctype, "application/json");
        assert_true(d->body_len > 0 && d->body[0] == '{' && d->body[d->body_len - 1] == '\n');
        assert_non_null(strstr(d->body, c->down_json));
    }
    assert_lines_in(d->fields, c->down_fields, "client head");
    assert_string_equal(d->trailers, c->down_trailers != NULL ? c->down_trailers : "");
    assert_string_equal(d->pauses, c->pauses != NULL ? c->pauses : "");
    static const int reuse_of[] = {[FIN_REUSE] = 1, [FIN_CLOSE] = 0, [FIN_NOW] = -1};
    assert_int_equal(d->finished, c->fin != FIN_NONE);
    if (c->fin != FIN_NONE)
        assert_int_equal(d->reuse, reuse_of[c->fin]);
    if (c->fin != FIN_NONE && c->status != 0)
        assert_int_equal(d->ends, !c->cut);
    assert_string_equal(fx_log(), c->log);
    assert_null(strstr(fx->logbuf, REAL_SECRET)); /* never a secret in the log */
    assert_null(strstr(fx->logbuf, CANARY));
}

static void case_run(const xcase_t *c)
{
    fx_setup(c->policy != NULL ? c->policy : POLICY_DEFAULT, c->repl);
    if (c->client_ms != 0)
        fx->cfg.client_idle_ms = c->client_ms;
    if (c->upstream_ms != 0)
        fx->cfg.upstream_first_byte_ms = c->upstream_ms;
    px_msg_t *m = parse_head(c->req, 1, 0);
    char sni[256] = "";
    px_pre_ctx_t ctx = {
        .kind = c->tls ? PX_LISTEN_HTTPS : PX_LISTEN_HTTP, .tls = c->tls, .sni = sni, .tunnel = ""};
    if (c->sni != NULL) {
        snprintf(sni, sizeof(sni), "%s", c->sni);
    } else if (c->tls) {
        int hi = px_msg_find(m, "host");
        assert_true(hi >= 0);
        snprintf(sni, sizeof(sni), "%.*s", (int)m->values[hi].len, m->buf + m->values[hi].off);
    }
    px_pre_t pre;
    px_precheck(m, &ctx, &pre);
    px_xchg_from_t from = {.ops = &down_ops,
                           .down = &fx->down,
                           .pre = ctx,
                           .log = fx->ctx.log,
                           .snap = fx->snap,
                           .up = (px_upmgr_t *)&fake_up, /* never read: the fake ignores it */
                           .budgets = &fx->budgets};
    fx->x = px_xchg_start(&fx->ctx, &from, m, &pre);
    assert_non_null(fx->x);
    fx_run();
    for (const step_t *st = c->steps; st->op != END_OF_SCRIPT; st++) {
        step_run(st);
        fx_run();
    }
    case_check(c);
    fx_teardown();
}

#define GET_ALLOWED "GET /x?q=1 HTTP/1.1\r\nHost: allowed.example\r\nUser-Agent: t\r\n\r\n"
#define OK_5 "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Up: yes\r\n\r\n"
#define POST_9 "POST /up HTTP/1.1\r\nHost: allowed.example\r\nContent-Length: 9\r\n\r\n"
#define POST_CHUNKED                                                                               \
    "POST /up HTTP/1.1\r\nHost: allowed.example\r\nTransfer-Encoding: chunked\r\n"                 \
    "TE: trailers\r\n\r\n"
#define GQL_MUTATION                                                                               \
    "{\"query\": \"mutation { deleteRepository(input: {}) { clientMutationId } }\"}"
#define GQL_QUERY "{\"query\": \"query { viewer { login } }\"}"
#define GQL_POST(len, extra)                                                                       \
    "POST /graphql HTTP/1.1\r\nHost: api.github.com\r\nContent-Type: application/json\r\n"         \
    "Content-Length: " #len "\r\n" extra "\r\n"

static const xcase_t cases[] = {
    {.name = "allowed GET: head upstream, response to the client, one log line",
     .req = "GET /x?q=1 HTTP/1.1\r\nHost: allowed.example\r\nUser-Agent: t\r\n"
            "Connection: keep-alive, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: timeout=5\r\n"
            "TE: trailers\r\n\r\n",
     .steps = {{U_READY}, {U_HEAD, OK_5}, {U_DATA, "hel"}, {U_DATA, "lo"}, {U_END}},
     .opened = 1,
     .up_head = "GET /x?q=1\nHost: allowed.example\nUser-Agent: t\nTE: trailers",
     .up_not = "Connection\nX-Hop\nKeep-Alive",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .body_mode = PX_RESP_LENGTH,
     .down_body = "hello",
     .down_fields = "X-Up: yes",
     .fin = FIN_REUSE,
     .log = "allowed GET http://allowed.example/x?q=1 -> 200\n"},
    {.name = "blocked host: 403 JSON, the upstream never opened",
     .req = "GET /secret HTTP/1.1\r\nHost: denied.example\r\n\r\n",
     .down_json = "\"error\": \"blocked_by_network_allowlist\"",
     .status = 403,
     .body_mode = PX_RESP_LENGTH,
     .fin = FIN_REUSE,
     .log = "BLOCKED GET http://denied.example/secret -> 403\n"},
    {.name = "body streamed in order; upstream full pauses the client body, drain resumes",
     .req = POST_9,
     .steps = {{U_READY},
               {C_BODY, "abc"},
               {U_FULL, .n = 1},
               {C_BODY, "def"},
               {CHECK_PAUSES, "1"},
               {U_DRAIN},
               {CHECK_PAUSES, "10"},
               {C_BODY, "ghi"},
               {C_END},
               {U_HEAD, OK_5},
               {U_DATA, "12345"},
               {U_END}},
     .opened = 1,
     .up_head = "POST /up\nContent-Length: 9",
     .up_body_mode = PX_UP_BODY_LENGTH,
     .up_body = "abcdefghi",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .body_mode = PX_RESP_LENGTH,
     .down_body = "12345",
     .pauses = "10",
     .fin = FIN_REUSE,
     .log = "allowed POST http://allowed.example/up -> 200\n"},
    {.name = "the real value of a secret in a header: 403 leak, never sent",
     .repl = REPL_DEFAULT,
     .req = "GET / HTTP/1.1\r\nHost: allowed.example\r\nX-Api: Bearer " REAL_SECRET "\r\n\r\n",
     .down_json = "\"error\": \"blocked_secret_leak\", \"kind\": \"secret\"",
     .status = 403,
     .body_mode = PX_RESP_LENGTH,
     .fin = FIN_REUSE,
     .log = "BLOCKED GET http://allowed.example/ -> 403 (leak: secret entry[0].value, raw, in "
            "header 'X-Api')\n"},
    /* response scrubbing (px_stage_scrub.c): the real value an upstream hands back becomes
     * its surrogate, in the reason, a header and the body, split across pieces */
    {.name = "scrub: a short body is held and goes out with its new Content-Length",
     .repl = REPL_DEFAULT,
     .req = GET_ALLOWED,
     .steps = {{U_READY},
               {U_HEAD, "HTTP/1.1 200 OK\r\nContent-Length: 40\r\nX-Echo: " REAL_SECRET "\r\n\r\n"},
               {U_DATA, "token=REAL-secret-"},
               {U_DATA, "value-0123456789;end"},
               {U_END}},
     .opened = 1,
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .body_mode = PX_RESP_LENGTH,
     .down_body = "token=" SURROGATE ";end",
     .down_fields = "Content-Length: 42\nX-Echo: " SURROGATE,
     .fin = FIN_REUSE,
     .log = "allowed GET http://allowed.example/x?q=1 -> 200 [scrubbed: 2 entry[0].value]\n"},
    {.name = "scrub: a chunked body streams, the value replaced across pieces",
     .repl = REPL_DEFAULT,
     .req = GET_ALLOWED,
     .steps = {{U_READY},
               {U_HEAD, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"},
               {U_DATA, "a REAL-se"},
               {U_DATA, "cret-value-0123456789 b"},
               {U_END}},
     .opened = 1,
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .body_mode = PX_RESP_CHUNKED,
     .down_body = "a " SURROGATE " b",
     .fin = FIN_REUSE,
     .log = "allowed GET http://allowed.example/x?q=1 -> 200 [scrubbed: 1 entry[0].value]\n"},
    {.name = "scrub: a body without a value goes out as it came, length kept",
     .repl = REPL_DEFAULT,
     .req = GET_ALLOWED,
     .steps = {{U_READY}, {U_HEAD, OK_5}, {U_DATA, "hel"}, {U_DATA, "lo"}, {U_END}},
     .opened = 1,
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .body_mode = PX_RESP_LENGTH,
     .down_body = "hello",
     .down_fields = "Content-Length: 5\nX-Up: yes",
     .fin = FIN_REUSE,
     .log = "allowed GET http://allowed.example/x?q=1 -> 200\n"},
    {.name = "a canary in a trailer aborts the upstream request: no trailer, no end sent",
     .repl = REPL_DEFAULT,
     .req = POST_CHUNKED,
     .steps = {{U_READY}, {C_BODY, "part1"}, {C_END, "X-Checksum: " CANARY}},
     .opened = 1,
     .up_head = "POST /up\nTransfer-Encoding: chunked\nTE: trailers",
     .up_body_mode = PX_UP_BODY_CHUNKED,
     .up_body = "part1",
     .up_aborted = 1,
     .down_json = "\"where\": \"trailer\", \"trailer\": \"X-Checksum\"",
     .status = 403,
     .body_mode = PX_RESP_LENGTH,
     .close = 1,
     .fin = FIN_CLOSE,
     .log = "BLOCKED POST http://allowed.example/up -> 403 (leak: canary planted-marker, raw, in "
            "trailer 'X-Checksum'; the upstream request was aborted)\n"},
    {.name = "clean trailers go upstream with the end",
     .repl = REPL_DEFAULT,
     .req = POST_CHUNKED,
     .steps = {{U_READY},
               {C_BODY, "part1"},
               {C_BODY, "part2"},
               {C_END, "X-Checksum: abc"},
               {U_HEAD, OK_5},
               {U_DATA, "12345"},
               {U_END}},
     .opened = 1,
     .up_head = "POST /up",
     .up_body_mode = PX_UP_BODY_CHUNKED,
     .up_body = "part1part2",
     .up_ended = 1,
     .up_trailers = "X-Checksum: abc\n",
     .up_done = 1,
     .status = 200,
     .body_mode = PX_RESP_LENGTH,
     .down_body = "12345",
     .fin = FIN_REUSE,
     .log = "allowed POST http://allowed.example/up -> 200\n"},
    {.name = "upstream error before the head: 502 and an ERROR line",
     .req = GET_ALLOWED,
     .steps = {{U_ERROR, "Connection failed: connection refused"}},
     .opened = 1,
     .up_head = "GET /x?q=1",
     .up_ended = 1,
     .status = 502,
     .body_mode = PX_RESP_LENGTH,
     .down_body = "{\"error\": \"upstream_error\", \"message\": \"Connection failed: connection "
                  "refused\"}\n",
     .fin = FIN_REUSE,
     .log = "ERROR GET http://allowed.example/x?q=1 -> Connection failed: connection refused\n"},
    {.name = "upstream error after the head: the response is cut, the connection too",
     .req = GET_ALLOWED,
     .steps = {{U_READY}, {U_HEAD, OK_5}, {U_DATA, "he"}, {U_ERROR, "Connection reset"}},
     .opened = 1,
     .up_head = "GET /x?q=1",
     .up_ended = 1,
     .status = 200,
     .body_mode = PX_RESP_LENGTH,
     .down_body = "he",
     .cut = 1,
     .fin = FIN_CLOSE,
     .log = "ERROR GET http://allowed.example/x?q=1 -> Connection reset\n"},
    {.name = "early answer from an upstream that closes: the rest of the body is unwanted",
     .req = POST_9,
     .steps = {{U_READY},
               {C_BODY, "abc"},
               {U_HEAD, "HTTP/1.1 413 Payload Too Large\r\nContent-Length: 3\r\n"
                        "Connection: close\r\n\r\n"},
               {U_DATA, "big"},
               {U_END}},
     .opened = 1,
     .up_head = "POST /up",
     .up_body_mode = PX_UP_BODY_LENGTH,
     .up_body = "abc",
     .up_aborted = 1,
     .status = 413,
     .body_mode = PX_RESP_LENGTH,
     .close = 1,
     .down_body = "big",
     .fin = FIN_CLOSE,
     .log = "allowed POST http://allowed.example/up -> 413\n"},
    {.name = "early answer on keep-alive: the body goes on flowing, then the connection is reused",
     .req = POST_9,
     .steps = {{U_READY},
               {C_BODY, "abc"},
               {U_HEAD, OK_5},
               {U_DATA, "12345"},
               {U_END},
               {C_BODY, "defghi"},
               {C_END}},
     .opened = 1,
     .up_head = "POST /up",
     .up_body_mode = PX_UP_BODY_LENGTH,
     .up_body = "abcdefghi",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .body_mode = PX_RESP_LENGTH,
     .down_body = "12345",
     .fin = FIN_REUSE,
     .log = "allowed POST http://allowed.example/up -> 200\n"},
    {.name = "GraphQL mutation refused: the body gathered, the upstream never opened",
     .tls = 1,
     .req = GQL_POST(73, ""),
     .steps = {{C_BODY, "{\"query\": \"mutation { deleteRepos"},
               {C_BODY, "itory(input: {}) { clientMutationId } }\"}"},
               {C_END}},
     .down_json = "mutation",
     .status = 403,
     .body_mode = PX_RESP_LENGTH,
     .fin = FIN_REUSE,
     .log = "BLOCKED POST https://api.github.com/graphql -> 403 [graphql-op: "
            "mutation/deleteRepository]\n"},
    {.name = "GraphQL query allowed: the gathered body goes up whole with its length",
     .tls = 1,
     .req = GQL_POST(39, ""),
     .steps = {{C_BODY, "{\"query\": \"query { vi"},
               {C_BODY, "ewer { login } }\"}"},
               {C_END},
               {U_READY},
               {U_HEAD, OK_5},
               {U_DATA, "12345"},
               {U_END}},
     .opened = 1,
     .up_head = "POST /graphql\nContent-Length: 39",
     .up_body_mode = PX_UP_BODY_LENGTH,
     .up_body = GQL_QUERY,
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .body_mode = PX_RESP_LENGTH,
     .down_body = "12345",
     .fin = FIN_REUSE,
     .log = "allowed POST https://api.github.com/graphql -> 200 [graphql-op: query/viewer]\n"},
    {.name = "GraphQL with 100-continue: airlock answers 100 itself, Expect stays here",
     .tls = 1,
     .req = GQL_POST(39, "Expect: 100-continue\r\n"),
     .steps = {{C_BODY, GQL_QUERY},
               {C_END},
               {U_READY},
               {U_HEAD, "HTTP/1.1 100 Continue\r\n\r\n"},
               {U_HEAD, OK_5},
               {U_DATA, "12345"},
               {U_END}},
     .opened = 1,
     .up_head = "POST /graphql",
     .up_not = "Expect",
     .up_body_mode = PX_UP_BODY_LENGTH,
     .up_body = GQL_QUERY,
     .up_ended = 1,
     .up_done = 1,
     .interim = "100 ",
     .status = 200,
     .body_mode = PX_RESP_LENGTH,
     .down_body = "12345",
     .fin = FIN_REUSE,
     .log = "allowed POST https://api.github.com/graphql -> 200 [graphql-op: query/viewer]\n"},
    {.name = "masking: the surrogate in Authorization becomes the real value upstream",
     .repl = REPL_DEFAULT,
     .tls = 1,
     .req =
         "GET /x HTTP/1.1\r\nHost: allowed.example\r\nAuthorization: Bearer " SURROGATE "\r\n\r\n",
     .steps = {{U_READY}, {U_HEAD, OK_5}, {U_DATA, "12345"}, {U_END}},
     .opened = 1,
     .up_head = "GET /x\nAuthorization: Bearer " REAL_SECRET,
     .up_not = "Authorization: Bearer " SURROGATE,
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .body_mode = PX_RESP_LENGTH,
     .down_body = "12345",
     .fin = FIN_REUSE,
     .log = "allowed GET https://allowed.example/x -> 200 [masked: 1]\n"},
    {.name = "masking over plain http: refused, the real value never crosses in clear",
     .repl = REPL_DEFAULT,
     .req =
         "GET /x HTTP/1.1\r\nHost: allowed.example\r\nAuthorization: Bearer " SURROGATE "\r\n\r\n",
     .down_json = "credentials_require_https",
     .status = 403,
     .body_mode = PX_RESP_LENGTH,
     .fin = FIN_REUSE,
     .log = "BLOCKED GET http://allowed.example/x -> 403 (credential needs https)\n"},
    {.name = "chunked response with trailers reaches the client chunked",
     .req = GET_ALLOWED,
     .steps = {{U_READY},
               {U_HEAD, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"},
               {U_DATA, "ab"},
               {U_DATA, "cd"},
               {U_END, "X-Sum: 4"}},
     .opened = 1,
     .up_head = "GET /x?q=1",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .body_mode = PX_RESP_CHUNKED,
     .down_body = "abcd",
     .down_trailers = "X-Sum: 4\n",
     .fin = FIN_REUSE,
     .log = "allowed GET http://allowed.example/x?q=1 -> 200\n"},
    {.name = "a response delimited by the close: the client connection closes after it",
     .req = GET_ALLOWED,
     .steps = {{U_READY}, {U_HEAD, "HTTP/1.1 200 OK\r\n\r\n"}, {U_DATA, "abcd"}, {U_END}},
     .opened = 1,
     .up_head = "GET /x?q=1",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .body_mode = PX_RESP_UNTIL_CLOSE,
     .close = 1,
     .down_body = "abcd",
     .fin = FIN_CLOSE,
     .log = "allowed GET http://allowed.example/x?q=1 -> 200\n"},
    {.name = "HEAD: the upstream is told, the answer has no body whatever its length says",
     .req = "HEAD /x HTTP/1.1\r\nHost: allowed.example\r\n\r\n",
     .steps = {{U_READY}, {U_HEAD, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"}, {U_END}},
     .opened = 1,
     .up_head = "HEAD /x",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .body_mode = PX_RESP_NONE,
     .down_body = "",
     .down_fields = "Content-Length: 100",
     .fin = FIN_REUSE,
     .log = "allowed HEAD http://allowed.example/x -> 200\n"},
    {.name = "100-continue streamed: Expect goes upstream, its 100 reaches the client",
     .req = "POST /up HTTP/1.1\r\nHost: allowed.example\r\nContent-Length: 4\r\n"
            "Expect: 100-continue\r\n\r\n",
     .steps = {{U_READY},
               {U_HEAD, "HTTP/1.1 100 Continue\r\n\r\n"},
               {C_BODY, "data"},
               {C_END},
               {U_HEAD, OK_5},
               {U_DATA, "12345"},
               {U_END}},
     .opened = 1,
     .up_head = "POST /up\nContent-Length: 4\nExpect: 100-continue",
     .up_body_mode = PX_UP_BODY_LENGTH,
     .up_body = "data",
     .up_ended = 1,
     .up_done = 1,
     .interim = "100 ",
     .status = 200,
     .body_mode = PX_RESP_LENGTH,
     .down_body = "12345",
     .fin = FIN_REUSE,
     .log = "allowed POST http://allowed.example/up -> 200\n"},
    {.name = "100-continue refused: 403 and the connection closes (the body may or may not come)",
     .req = "POST /up HTTP/1.1\r\nHost: denied.example\r\nContent-Length: 4\r\n"
            "Expect: 100-continue\r\n\r\n",
     .down_json = "blocked_by_network_allowlist",
     .status = 403,
     .body_mode = PX_RESP_LENGTH,
     .close = 1,
     .fin = FIN_CLOSE,
     .log = "BLOCKED POST http://denied.example/up -> 403\n"},
    {.name = "keep-alive: HTTP/1.0 without keep-alive is not reused",
     .req = "GET /x HTTP/1.0\r\nHost: allowed.example\r\n\r\n",
     .steps = {{U_READY}, {U_HEAD, OK_5}, {U_DATA, "12345"}, {U_END}},
     .opened = 1,
     .up_head = "GET /x",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .body_mode = PX_RESP_LENGTH,
     .close = 1,
     .down_body = "12345",
     .fin = FIN_CLOSE,
     .log = "allowed GET http://allowed.example/x -> 200\n"},
    {.name = "keep-alive: Connection: close is not reused, and not sent upstream",
     .req = "GET /x HTTP/1.1\r\nHost: allowed.example\r\nConnection: close\r\n\r\n",
     .steps = {{U_READY}, {U_HEAD, OK_5}, {U_DATA, "12345"}, {U_END}},
     .opened = 1,
     .up_head = "GET /x",
     .up_not = "Connection",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .body_mode = PX_RESP_LENGTH,
     .close = 1,
     .down_body = "12345",
     .fin = FIN_CLOSE,
     .log = "allowed GET http://allowed.example/x -> 200\n"},
    {.name = "a slow client: the response is paused upstream, drain resumes it",
     .req = GET_ALLOWED,
     .steps = {{U_READY},
               {U_HEAD, OK_5},
               {C_FULL, .n = 1},
               {U_DATA, "123"},
               {CHECK_UP_PAUSED, .n = 1},
               {C_DRAIN},
               {CHECK_UP_PAUSED, .n = 0},
               {U_DATA, "45"},
               {U_END}},
     .opened = 1,
     .up_head = "GET /x?q=1",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .body_mode = PX_RESP_LENGTH,
     .down_body = "12345",
     .fin = FIN_REUSE,
     .log = "allowed GET http://allowed.example/x?q=1 -> 200\n"},
    {.name = "the client goes away mid-response: upstream aborted, no finished call",
     .req = GET_ALLOWED,
     .steps = {{U_READY}, {U_HEAD, OK_5}, {U_DATA, "12"}, {C_ABORT, "Client disconnected."}},
     .opened = 1,
     .up_head = "GET /x?q=1",
     .up_ended = 1,
     .up_aborted = 1,
     .status = 200,
     .body_mode = PX_RESP_LENGTH,
     .down_body = "12",
     .log = "ERROR GET http://allowed.example/x?q=1 -> Client disconnected.\n"},
    {.name = "a malformed request body before the answer: upstream aborted, 400, close",
     .req = POST_CHUNKED,
     .steps = {{U_READY}, {C_BODY, "abc"}, {C_BROKEN, "bad chunk"}},
     .opened = 1,
     .up_head = "POST /up",
     .up_body_mode = PX_UP_BODY_CHUNKED,
     .up_body = "abc",
     .up_aborted = 1,
     .down_json = "\"error\": \"bad_request\"",
     .status = 400,
     .body_mode = PX_RESP_LENGTH,
     .close = 1,
     .fin = FIN_CLOSE,
     .log = "ERROR POST http://allowed.example/up -> malformed request body: bad chunk\n"},
    {.name = "the upstream does not answer in time: 502, the request aborted upstream",
     .req = GET_ALLOWED,
     .upstream_ms = 300,
     .steps = {{U_READY}, {WAIT, .n = 600}},
     .opened = 1,
     .up_head = "GET /x?q=1",
     .up_ended = 1,
     .up_aborted = 1,
     .down_json = "Upstream did not answer in time",
     .status = 502,
     .body_mode = PX_RESP_LENGTH,
     .fin = FIN_REUSE,
     .log = "ERROR GET http://allowed.example/x?q=1 -> Upstream did not answer in time\n"},
    {.name = "no answer timer before on_ready: connect and TLS have their own",
     .req = GET_ALLOWED,
     .upstream_ms = 300,
     .steps = {{WAIT, .n = 600},
               {SET_UPSTREAM_MS, .n = 600000},
               {U_READY},
               {U_HEAD, OK_5},
               {U_DATA, "12345"},
               {U_END}},
     .opened = 1,
     .up_head = "GET /x?q=1",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .body_mode = PX_RESP_LENGTH,
     .down_body = "12345",
     .fin = FIN_REUSE,
     .log = "allowed GET http://allowed.example/x?q=1 -> 200\n"},
    {.name = "a client that stalls in its body: ERROR line, the upstream aborted, closed now",
     .req = POST_9,
     .client_ms = 300,
     .steps = {{U_READY}, {C_BODY, "abc"}, {WAIT, .n = 600}},
     .opened = 1,
     .up_head = "POST /up",
     .up_body_mode = PX_UP_BODY_LENGTH,
     .up_body = "abc",
     .up_aborted = 1,
     .fin = FIN_NOW,
     .log = "ERROR POST http://allowed.example/up -> Client stalled during the request body\n"},
    /* the client timer (300 ms, longer than a loaded machine takes between two steps) must not
     * run while the exchange itself holds the body back */
    {.name = "a client paused by upstream backpressure is not timed out as stalled",
     .req = POST_9,
     .client_ms = 300,
     .upstream_ms = 100000,
     .steps = {{U_READY}, {U_FULL, .n = 1}, {C_BODY, "abc"}, {WAIT, .n = 600}},
     .opened = 1,
     .up_head = "POST /up",
     .up_body_mode = PX_UP_BODY_LENGTH,
     .up_body = "abc",

     .pauses = "1",
     .log = ""},
    {.name = "Host disagrees with the SNI: 403 host mismatch, never opened",
     .tls = 1,
     .sni = "other.example",
     .req = GET_ALLOWED,
     .down_json = "\"sni\": \"other.example\"",
     .status = 403,
     .body_mode = PX_RESP_LENGTH,
     .fin = FIN_REUSE,
     .log = "BLOCKED GET https://allowed.example/x?q=1 -> 403 (host mismatch: "
            "header=allowed.example, sni=other.example)\n"},
    {.name = "a 101 to a request that asked no upgrade: 502, the upstream aborted",
     .req = GET_ALLOWED,
     .steps = {{U_READY},
               {U_HEAD, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                        "Connection: Upgrade\r\n\r\n"}},
     .opened = 1,
     .up_head = "GET /x?q=1",
     .up_ended = 1,
     .up_aborted = 1,
     .down_json = "101 without an upgrade",
     .status = 502,
     .body_mode = PX_RESP_LENGTH,
     .fin = FIN_REUSE,
     .log = "ERROR GET http://allowed.example/x?q=1 -> invalid response from upstream: 101 "
            "without an upgrade\n"},
    {.name = "a refused request's body is read and dropped, then the connection is reused",
     .req = "POST /up HTTP/1.1\r\nHost: denied.example\r\nContent-Length: 9\r\n\r\n",
     .steps = {{C_BODY, "abc"}, {C_BODY, "defghi"}, {C_END}},
     .down_json = "blocked_by_network_allowlist",
     .status = 403,
     .body_mode = PX_RESP_LENGTH,
     .fin = FIN_REUSE,
     .log = "BLOCKED POST http://denied.example/up -> 403\n"},
    {.name = "a canary split across body pieces: its start is held back, never sent",
     .repl = REPL_DEFAULT,
     .req = POST_CHUNKED,
     .steps = {{U_READY}, {C_BODY, "abc CANARY-7f3a"}, {C_BODY, "9b2c4d5e6f70a1 xyz"}},
     .opened = 1,
     .up_head = "POST /up",
     .up_body_mode = PX_UP_BODY_CHUNKED,
     .up_body = "abc ",
     .up_aborted = 1,
     .down_json = "\"where\": \"body\"",
     .status = 403,
     .body_mode = PX_RESP_LENGTH,
     .close = 1,
     .fin = FIN_CLOSE,
     .log = "BLOCKED POST http://allowed.example/up -> 403 (leak: canary planted-marker, raw, in "
            "body; the upstream request was aborted)\n"},
};

static void test_px_xchg_case(void **state)
{
    const xcase_t *c = *state;
    case_run(c);
}

#define NCASES (sizeof(cases) / sizeof(cases[0]))

int main(void)
{
    struct CMUnitTest tests[NCASES];
    for (size_t i = 0; i < NCASES; i++)
        tests[i] = (struct CMUnitTest){.name = cases[i].name,
                                       .test_func = test_px_xchg_case,
                                       .initial_state = (void *)&cases[i]};
    return cmocka_run_group_tests_name("test_px_xchg", tests, NULL, NULL);
}
