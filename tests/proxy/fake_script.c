/* The script runner of the stage tests (tests/proxy/test_px_stage_*.c), #included after
 * fake_upstream.c, fake_down.c and fake_env.c. A case is a request head, a script of client and
 * upstream events, then what each side saw, the log, and where the head pipeline stopped.
 *
 * "Where it stopped" is the pipeline's own record (x->stage_done, x->stage_cur; px_stage.c),
 * read right after px_xchg_start() or at a CHECK_HEAD step, as text: the stages passed in table
 * order, then "|name" for the stage that refused or waits ("precheck leak |policy"), nothing
 * after them when the request went upstream. A credential stage passed over while a body filter
 * holds the body (PX_STAGE_AFTER_FILTERS) is not in the list until it ran. */

typedef enum op {
    END_OF_SCRIPT = 0,
    C_BODY,     /* the client sends body bytes s */
    C_END,      /* the client's body ends (trailers s, may be NULL) */
    C_ABORT,    /* the client went away (reason s) */
    U_READY,    /* the upstream connected and sent the head */
    U_HEAD,     /* the upstream answers head s (the request open now: the exchange's or a
                 * stage's own) */
    U_DATA,     /* response body bytes s */
    U_END,      /* the response ends (trailers s, may be NULL) */
    U_ERROR,    /* the upstream failed (why s) */
    WAIT,       /* n ms pass (the exchange's and the stages' timers may fire) */
    CHECK_HEAD, /* the head pipeline is at s now (the exchange still running) */
    CHECK_OPEN, /* the request open upstream now has this head (lines of s, in order) */
    CALL,       /* fn() runs: a check or a change only this file needs */
} op_t;

typedef struct step {
    op_t op;
    const char *s;
    int n;
    void (*fn)(void);
} step_t;

enum { FIN_NONE = 0, FIN_REUSE, FIN_CLOSE, FIN_NOW }; /* finished(1), (0), (-1) */

typedef struct scase {
    const char *name;
    const char *policy; /* NULL: the file's default */
    const char *repl;   /* NULL: no replacements file */
    int tls;            /* came over TLS (SNI = the Host unless sni says) */
    const char *sni;
    px_listener_kind_t kind; /* 0: PX_LISTEN_HTTP, or HTTPS when tls */
    const char *tunnel;      /* inside an accepted CONNECT to this host */
    uint64_t upstream_ms;    /* the upstream's first-byte timeout (0: the default) */
    void (*pre)(void);       /* runs once the environment is up, before the request */
    const char *req;         /* the request head */
    const char *head;        /* the head pipeline right after the start (NULL: not checked) */
    step_t steps[20];
    /* the upstream: the requests opened in order ("METHOD host:port path"), then the last one */
    const char *opens;
    const char *up_head; /* lines that must be in its head, in this order */
    const char *up_not;  /* ... and lines that must not be (each a prefix) */
    int up_body_mode;
    const char *up_body;
    int up_ended;
    int up_aborted, up_done;
    /* the client */
    const char *interim;
    int status;
    int close;
    const char *down_body; /* exact (NULL: not checked) */
    const char *down_json; /* airlock's own answer: a JSON body holding this */
    const char *pauses;
    int cut; /* the response was cut: no end */
    int fin;
    const char *log; /* the log, whole */
} scase_t;

/* The head pipeline of the running exchange, as text (above). */
static void stage_path(char *buf, size_t cap)
{
    size_t n = 0, len = 0;
    const px_stage_t *const *t = px_stages(&n);
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) /* the head stages (a response-only one has no head hook) */
        if ((fx->x->stage_done & (1u << i)) && t[i]->on_head != NULL)
            down_add(buf, cap, &len, "%s%s", len > 0 ? " " : "", t[i]->name);
    if (fx->x->stage_done != (1u << n) - 1 && fx->x->stage_cur >= 0)
        down_add(buf, cap, &len, "%s|%s", len > 0 ? " " : "", t[fx->x->stage_cur]->name);
}

static void check_head(const char *want)
{
    char have[256];
    assert_non_null(fx->x);
    assert_false(fx->down.gone);
    stage_path(have, sizeof(have));
    assert_string_equal(have, want);
}

static void step_run(const step_t *st)
{
    px_fields_t t;
    switch (st->op) {
    case C_BODY:
        assert_false(fx->down.gone);
        px_xchg_body(fx->x, st->s, strlen(st->s));
        break;
    case C_END:
        assert_false(fx->down.gone);
        if (st->s != NULL)
            make_fields(&t, st->s);
        px_xchg_body_end(fx->x, st->s != NULL ? &t : NULL);
        break;
    case C_ABORT:
        assert_false(fx->down.gone);
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
    case WAIT:
        usleep((useconds_t)st->n * 1000);
        uv_update_time(&fx->uv);
        break;
    case CHECK_HEAD:
        check_head(st->s);
        break;
    case CHECK_OPEN:
        fake_up_live(&fake_up);
        assert_lines_in(fake_up.head, st->s, "open upstream head");
        break;
    case CALL:
        st->fn();
        break;
    case END_OF_SCRIPT:
        break;
    }
}

/* Starts the request head req as it would arrive in c's context (the pre-checks decide it). */
static void script_start(const scase_t *c, const char *req)
{
    px_msg_t *m = parse_head(req, 1, 0);
    char sni[256] = "", tunnel[256] = "";
    px_pre_ctx_t ctx = {.kind = c->kind != 0 ? c->kind
                                : c->tls     ? PX_LISTEN_HTTPS
                                             : PX_LISTEN_HTTP,
                        .tls = c->tls,
                        .sni = sni,
                        .tunnel = tunnel};
    if (c->tunnel != NULL) {
        snprintf(tunnel, sizeof(tunnel), "%s", c->tunnel);
        ctx.tunnel_port = 443;
    }
    if (c->sni != NULL) {
        snprintf(sni, sizeof(sni), "%s", c->sni);
    } else if (c->tls) {
        int hi = px_msg_find(m, "host");
        assert_true(hi >= 0);
        snprintf(sni, sizeof(sni), "%.*s", (int)m->values[hi].len, m->buf + m->values[hi].off);
        char *colon = strchr(sni, ':');
        if (colon != NULL)
            *colon = '\0';
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
    memset(&fx->down, 0, sizeof(fx->down));
    fx->x = px_xchg_start(&fx->ctx, &from, m, &pre);
    assert_non_null(fx->x);
}

/* An earlier exchange on the same environment (budgets, token cache), run to its end: its log
 * line stays in the log; the client and upstream records start anew. */
__attribute__((unused)) static void script_prior(const char *req, int tls, const step_t *steps)
{
    scase_t c = {.tls = tls};
    script_start(&c, req);
    fx_run();
    for (const step_t *st = steps; st->op != END_OF_SCRIPT; st++) {
        step_run(st);
        fx_run();
    }
    assert_int_equal(fx->down.finished, 1);
    assert_false(fake_up.live);
    fx->x = NULL;
    fake_up_reset();
}

static void script_check(const scase_t *c)
{
    const fake_down_t *d = &fx->down;
    assert_string_equal(fake_up.opens, c->opens != NULL ? c->opens : "");
    if (fake_up.opened) {
        assert_lines_in(fake_up.head, c->up_head, "upstream head");
        assert_no_line(fake_up.head, c->up_not, "upstream head");
        assert_int_equal(fake_up.body_mode, c->up_body_mode);
        assert_int_equal(fake_up.body_len, strlen(c->up_body != NULL ? c->up_body : ""));
        assert_memory_equal(fake_up.body, c->up_body != NULL ? c->up_body : "", fake_up.body_len);
        assert_int_equal(fake_up.data_after_end, 0);
    }
    assert_int_equal(fake_up.ended, c->up_ended);
    assert_int_equal(fake_up.aborted, c->up_aborted);
    assert_int_equal(fake_up.done, c->up_done);
    assert_string_equal(d->interim, c->interim != NULL ? c->interim : "");
    assert_int_equal(d->status, c->status);
    if (c->status != 0)
        assert_int_equal(d->close, c->close);
    if (c->down_body != NULL) {
        assert_int_equal(d->body_len, strlen(c->down_body));
        assert_memory_equal(d->body, c->down_body, d->body_len);
    }
    if (c->down_json != NULL) {
        assert_string_equal(d->ctype, "application/json");
        assert_true(d->body_len > 0 && d->body[0] == '{' && d->body[d->body_len - 1] == '\n');
        if (strstr(d->body, c->down_json) == NULL)
            fail_msg("no '%s' in the answer: %.*s", c->down_json, (int)d->body_len, d->body);
    }
    assert_string_equal(d->pauses, c->pauses != NULL ? c->pauses : "");
    static const int reuse_of[] = {[FIN_REUSE] = 1, [FIN_CLOSE] = 0, [FIN_NOW] = -1};
    assert_int_equal(d->finished, c->fin != FIN_NONE);
    if (c->fin != FIN_NONE)
        assert_int_equal(d->reuse, reuse_of[c->fin]);
    if (c->fin != FIN_NONE && c->status != 0)
        assert_int_equal(d->ends, !c->cut);
    assert_string_equal(fx_log(), c->log);
}

/* Runs case c (policy: the file's default allowlist) and releases everything: the exchange, its
 * stages' state and the loop (fx_teardown fails the test on a handle left open; ASan on a leak). */
static void script_run(const scase_t *c, const char *policy)
{
    fx_setup(c->policy != NULL ? c->policy : policy, c->repl);
    if (c->upstream_ms != 0)
        fx->cfg.upstream_first_byte_ms = c->upstream_ms;
    if (c->pre != NULL)
        c->pre();
    script_start(c, c->req);
    if (c->head != NULL)
        check_head(c->head);
    fx_run();
    for (const step_t *st = c->steps; st->op != END_OF_SCRIPT; st++) {
        step_run(st);
        fx_run();
    }
    script_check(c);
    fx_teardown();
}

/* cmocka runs this after each case, passed or failed: a case that failed (cmocka jumps out of
 * script_run) leaves no temp dir behind. Its loop and memory are left as they are. */
static int script_cleanup(void **state)
{
    (void)state;
    if (fx == NULL)
        return 0;
    unlink(fx->al_path);
    unlink(fx->repl_path);
    unlink(fx->log_path);
    rmdir(fx->dir);
    fx = NULL;
    return 0;
}

/* The cases of a file as cmocka tests, each with its case as the state. */
/* clang-format off */
#define SCRIPT_TESTS(tests, cases, fn)                                                             \
    struct CMUnitTest tests[sizeof(cases) / sizeof(cases[0])];                                     \
    for (size_t i_ = 0; i_ < sizeof(cases) / sizeof(cases[0]); i_++)                               \
        tests[i_] = (struct CMUnitTest){                                                           \
            .name = cases[i_].name, .test_func = fn, .teardown_func = script_cleanup,         \
            .initial_state = (void *)&cases[i_]}
/* clang-format on */
