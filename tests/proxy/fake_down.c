/* A recording client side for the exchange's unit tests (#included by tests/proxy/test_px_xchg.c):
 * a px_down_ops_t that keeps what the client would receive (interim and final heads, body
 * bytes, the end and its trailers), answers full() as the test says, and notes pause_body() and
 * finished() calls. After finished() or px_xchg_abort() any call fails the test. */

typedef struct fake_down {
    char interim[64]; /* "100 " per interim head */
    size_t interim_len;
    int heads; /* final heads */
    int status;
    px_resp_body_t body_mode;
    uint64_t length;
    int close;
    char ctype[64];
    char fields[2048]; /* "Name: value\n" of the final head's fields */
    size_t fields_len;
    char body[65536];
    size_t body_len;
    int ends;
    char trailers[512];
    size_t trailers_len;
    int full;        /* what full() answers */
    char pauses[32]; /* "1" / "0" per pause_body call */
    size_t pauses_len;
    int finished; /* finished() calls */
    int reuse;
    int gone; /* finished or aborted: no call may come after */
} fake_down_t;

static void down_add(char *buf, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void down_add(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (n > 0 && *len + (size_t)n < cap)
        *len += (size_t)n;
}

static void on_down_head(void *down, const px_resp_t *r)
{
    fake_down_t *d = down;
    assert_false(d->gone);
    if (r->status >= 100 && r->status < 200 && r->status != 101) {
        down_add(d->interim, sizeof(d->interim), &d->interim_len, "%d ", r->status);
        return;
    }
    assert_int_equal(d->heads, 0); /* one final head */
    d->heads++;
    d->status = r->status;
    d->body_mode = r->body;
    d->length = r->length;
    d->close = r->close;
    snprintf(d->ctype, sizeof(d->ctype), "%s", r->ctype != NULL ? r->ctype : "");
    const px_msg_t *m = r->fields;
    for (size_t i = 0; m != NULL && i < m->n; i++)
        down_add(d->fields, sizeof(d->fields), &d->fields_len, "%.*s: %.*s\n", (int)m->names[i].len,
                 m->buf + m->names[i].off, (int)m->values[i].len, m->buf + m->values[i].off);
}

static void on_down_data(void *down, const char *data, size_t len)
{
    fake_down_t *d = down;
    assert_false(d->gone);
    assert_int_equal(d->heads, 1);
    assert_true(d->body_len + len <= sizeof(d->body));
    memcpy(d->body + d->body_len, data, len);
    d->body_len += len;
}

static void on_down_end(void *down, const px_fields_t *t)
{
    fake_down_t *d = down;
    assert_false(d->gone);
    assert_int_equal(d->heads, 1);
    d->ends++;
    for (size_t i = 0; t != NULL && i < t->n; i++)
        down_add(d->trailers, sizeof(d->trailers), &d->trailers_len, "%.*s: %.*s\n",
                 (int)t->names[i].len, t->buf + t->names[i].off, (int)t->values[i].len,
                 t->buf + t->values[i].off);
}

static int on_down_full(void *down)
{
    fake_down_t *d = down;
    return d->full;
}

static void on_down_pause(void *down, int pause)
{
    fake_down_t *d = down;
    assert_false(d->gone);
    down_add(d->pauses, sizeof(d->pauses), &d->pauses_len, "%d", pause);
}

static void on_down_tunnel(void *down, px_tunnel_t *t)
{
    (void)down, (void)t;
    fail_msg("no case upgrades");
}

static void on_down_finished(void *down, int reuse)
{
    fake_down_t *d = down;
    assert_false(d->gone);
    d->finished++;
    d->reuse = reuse;
    d->gone = 1;
}

static const px_down_ops_t down_ops = {
    .head = on_down_head,
    .data = on_down_data,
    .end = on_down_end,
    .full = on_down_full,
    .pause_body = on_down_pause,
    .tunnel = on_down_tunnel,
    .finished = on_down_finished,
};
