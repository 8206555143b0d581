/* What an exchange runs in, for its unit tests (#included by tests/proxy/test_px_xchg.c after
 * fake_upstream.c and fake_down.c): a real libuv loop and a px_ctx_t holding only what the
 * exchange reads (loop, cfg, log), a policy snapshot loaded by px_snapshot_load() from allowlist
 * and replacements text written to a temp dir, a network log there that the test reads back;
 * and heads and trailers parsed from text as a connection would parse them. */

typedef struct fx {
    uv_loop_t uv;
    px_ctx_t ctx;
    px_config_t cfg;
    char dir[64];
    char al_path[128], repl_path[128], log_path[128];
    px_snapshot_t *snap;
    struct addon_budget_table *budgets;
    px_xchg_t *x;
    fake_down_t down;
    char logbuf[8192];
} fx_t;

static fx_t *fx;

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
}

static void fx_setup(const char *policy, const char *repl)
{
    fx = calloc(1, sizeof(*fx));
    assert_non_null(fx);
    fake_up_reset();
    snprintf(fx->dir, sizeof(fx->dir), "/tmp/test_px_xchg.XXXXXX");
    assert_non_null(mkdtemp(fx->dir));
    snprintf(fx->al_path, sizeof(fx->al_path), "%s/allowlist.yaml", fx->dir);
    snprintf(fx->repl_path, sizeof(fx->repl_path), "%s/replacements.json", fx->dir);
    snprintf(fx->log_path, sizeof(fx->log_path), "%s/network.log", fx->dir);
    write_file(fx->al_path, policy);
    if (repl != NULL)
        write_file(fx->repl_path, repl);
    px_config_defaults(&fx->cfg);
    fx->cfg.allowlist_path = fx->al_path;
    fx->cfg.allowlist_format = 0;
    fx->cfg.replacements_path = fx->repl_path;
    fx->cfg.log_path = fx->log_path;
    assert_int_equal(px_snapshot_load(&fx->cfg, 1, &fx->snap), 0);
    assert_int_equal(uv_loop_init(&fx->uv), 0);
    assert_int_equal(px_loop_init(&fx->ctx.loop, &fx->uv), 0);
    fx->ctx.cfg = &fx->cfg;
    char err[256];
    assert_int_equal(px_log_open(fx->log_path, 1, &fx->ctx.log, err, sizeof(err)), 0);
    fx->ctx.scope.snap = fx->snap;
    fx->ctx.scope.log = fx->ctx.log;
}

/* A few loop turns: the deferred calls (finished) and the timers' close callbacks run. */
static void fx_run(void)
{
    for (int i = 0; i < 4; i++)
        uv_run(&fx->uv, UV_RUN_NOWAIT);
}

/* The log as written, read back. */
static const char *fx_log(void)
{
    px_log_flush(fx->ctx.log);
    FILE *f = fopen(fx->log_path, "r");
    assert_non_null(f);
    size_t n = fread(fx->logbuf, 1, sizeof(fx->logbuf) - 1, f);
    fclose(f);
    fx->logbuf[n] = '\0';
    return fx->logbuf;
}

static void fx_teardown(void)
{
    if (fx->x != NULL && !fx->down.gone) {
        px_xchg_abort(fx->x, NULL); /* the client connection closing */
        fx->down.gone = 1;
    }
    fx_run();
    assert_false(fake_up.live); /* the exchange let go of its upstream request */
    px_log_close(fx->ctx.log);
    px_loop_close(&fx->ctx.loop);
    uv_run(&fx->uv, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&fx->uv), 0); /* every handle closed: the exchange is freed */
    px_snapshot_unref(fx->snap);
    if (fx->budgets != NULL)
        addon_budget_table_free(fx->budgets);
    unlink(fx->al_path);
    unlink(fx->repl_path);
    unlink(fx->log_path);
    rmdir(fx->dir);
    free(fx);
    fx = NULL;
}

/* ---- parsing heads and trailers from text ---------------------------------------------------- */

static px_msg_t *parsed;

static int on_parsed_head(void *owner, px_msg_t *m)
{
    (void)owner;
    parsed = m;
    return 1; /* stop: the body is the script's */
}

static int on_parsed_data(void *owner, const char *data, size_t len)
{
    (void)owner, (void)data, (void)len;
    return 0;
}

static int on_parsed_end(void *owner, const px_fields_t *t)
{
    (void)owner, (void)t;
    return 0;
}

static const px_h1_cbs_t parse_cbs = {on_parsed_head, on_parsed_data, on_parsed_end};

/* Parses a request (is_request) or response head from text; no_body: the response answers a
 * HEAD. */
static px_msg_t *parse_head(const char *text, int is_request, int no_body)
{
    px_h1_t p;
    px_h1_init(&p, is_request, &parse_cbs, NULL);
    if (no_body)
        px_h1_expect_no_body(&p);
    parsed = NULL;
    size_t used = 0;
    assert_int_equal(px_h1_feed(&p, text, strlen(text), &used), 0);
    px_h1_free(&p);
    assert_non_null(parsed);
    return parsed;
}

/* Trailer fields from "Name: value\n..." text. */
static void make_fields(px_fields_t *t, const char *text)
{
    memset(t, 0, sizeof(*t));
    const char *s = text;
    while (*s != '\0' && t->n < PX_TRAILERS_MAX) {
        const char *nl = strchr(s, '\n');
        size_t ll = nl != NULL ? (size_t)(nl - s) : strlen(s);
        const char *colon = memchr(s, ':', ll);
        assert_non_null(colon);
        size_t nlen = (size_t)(colon - s);
        const char *v = colon + 1;
        while (*v == ' ')
            v++;
        size_t vlen = ll - (size_t)(v - s);
        t->names[t->n] = (px_span_t){(uint32_t)t->len, (uint32_t)nlen};
        memcpy(t->buf + t->len, s, nlen);
        t->len += nlen;
        t->values[t->n] = (px_span_t){(uint32_t)t->len, (uint32_t)vlen};
        memcpy(t->buf + t->len, v, vlen);
        t->len += vlen;
        t->n++;
        s += ll + (nl != NULL);
    }
}

/* ---- checking recorded text ------------------------------------------------------------------ */

/* Each line of want is a line of have, in order. */
static void assert_lines_in(const char *have, const char *want, const char *what)
{
    const char *from = have;
    const char *w = want;
    while (w != NULL && *w != '\0') {
        const char *nl = strchr(w, '\n');
        size_t len = nl != NULL ? (size_t)(nl - w) : strlen(w);
        char line[512];
        snprintf(line, sizeof(line), "%.*s\n", (int)len, w);
        const char *at = strstr(from, line);
        if (at == NULL || (at != have && at[-1] != '\n'))
            fail_msg("%s: no line '%.*s' (in order) in:\n%s", what, (int)len, w, have);
        from = at + strlen(line);
        w += len + (nl != NULL);
    }
}

static void assert_no_line(const char *have, const char *nots, const char *what)
{
    const char *w = nots;
    while (w != NULL && *w != '\0') {
        const char *nl = strchr(w, '\n');
        size_t len = nl != NULL ? (size_t)(nl - w) : strlen(w);
        for (const char *l = have; *l != '\0';) {
            if (strncasecmp(l, w, len) == 0)
                fail_msg("%s: a line starts with '%.*s':\n%s", what, (int)len, w, have);
            const char *e = strchr(l, '\n');
            l = e != NULL ? e + 1 : l + strlen(l);
        }
        w += len + (nl != NULL);
    }
}
