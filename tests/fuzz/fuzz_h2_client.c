/* Fuzzes the HTTP/2 client codec (px_h2cli.c): arbitrary server bytes after a few requests
 * were opened (a GET, a HEAD, a POST with a body and trailers, one whose owner pauses), fed in
 * pieces whose size the first byte picks. Owners act as the upstream client would: some
 * streams are paused and resumed, some cancelled on their head, body bytes sent while the
 * queue has room; every head is checked for spans inside its buffer and for the framing flags
 * the exchange reads (exactly one of LENGTH, NO_BODY, CHUNKED on a final head). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "http/px_h2cli.h"

typedef struct fz_st {
    px_h2cs_t *st;
    int done; /* let go */
    int paused;
    int cancel_on_head;
} fz_st_t;

static px_h2c_t *g_h;

static void check_span(const px_msg_t *m, px_span_t s)
{
    if ((size_t)s.off + s.len > m->len)
        __builtin_trap();
}

static void on_head(void *o, px_msg_t *m)
{
    fz_st_t *s = o;
    if (s->done)
        __builtin_trap();
    for (size_t i = 0; i < m->n; i++) {
        check_span(m, m->names[i]);
        check_span(m, m->values[i]);
    }
    if (m->status >= 200) {
        unsigned f = m->flags & (PX_MSG_LENGTH | PX_MSG_NO_BODY | PX_MSG_CHUNKED);
        if (f != PX_MSG_LENGTH && f != PX_MSG_NO_BODY && f != PX_MSG_CHUNKED)
            __builtin_trap();
        if (m->flags & PX_MSG_UNTIL_CLOSE)
            __builtin_trap();
    }
    px_msg_free(m);
    if (s->cancel_on_head) {
        s->done = 1;
        px_h2c_close(g_h, s->st, 1);
    }
}

static void on_data(void *o, const char *d, size_t len)
{
    fz_st_t *s = o;
    if (s->done || s->paused)
        __builtin_trap();
    (void)d;
    (void)len;
}

static void on_end(void *o, const px_fields_t *t)
{
    fz_st_t *s = o;
    if (s->done)
        __builtin_trap();
    for (size_t i = 0; t != NULL && i < t->n; i++)
        if ((size_t)t->values[i].off + t->values[i].len > t->len)
            __builtin_trap();
    s->done = 1;
    px_h2c_close(g_h, s->st, 0);
}

static void on_error(void *o, uint32_t code, const char *why)
{
    fz_st_t *s = o;
    (void)code;
    if (s->done || why == NULL)
        __builtin_trap();
    s->done = 1;
    px_h2c_close(g_h, s->st, 1);
}

static void on_drain(void *o)
{
    (void)o;
}

static const px_h2c_cbs_t cbs = {on_head, on_data, on_end, on_error, on_drain};

static void flush(px_h2c_t *h)
{
    const char *out;
    size_t len;
    for (int i = 0; i < 64; i++)
        if (px_h2c_take_output(h, &out, &len) != 0 || len == 0)
            break;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t piece = (size_t)data[0] * 4 + 1;
    data++;
    size--;
    px_h2c_t *h = px_h2c_new(&cbs);
    if (h == NULL)
        return 0;
    g_h = h;
    static const px_h2_field_t f[] = {{"Host", 4, "example.com", 11}, {"Accept", 6, "*/*", 3}};
    fz_st_t s[4] = {{0}};
    s[3].cancel_on_head = 1;
    static const char *const methods[] = {"GET", "HEAD", "POST", "GET"};
    for (int i = 0; i < 4; i++) {
        px_h2c_req_t q = {methods[i], strlen(methods[i]), "https", 5, "", 0, "/", 1, f, 2};
        if (px_h2c_open(h, &q, i == 2, i == 1, &s[i], &s[i].st) != 0)
            s[i].done = 1;
    }
    if (!s[2].done) {
        px_h2c_send_data(h, s[2].st, "hello", 5);
        px_fields_t t = {.len = 5, .n = 1};
        memcpy(t.buf, "x-ab1", 5);
        t.names[0] = (px_span_t){0, 4};
        t.values[0] = (px_span_t){4, 1};
        px_h2c_end(h, s[2].st, &t);
    }
    flush(h);
    int rc = 0;
    size_t k = 0;
    for (size_t off = 0; rc == 0 && off < size; off += piece, k++) {
        size_t n = size - off < piece ? size - off : piece;
        if (!s[0].done && (k % 3) == 1) { /* stream 1 pauses now and then */
            s[0].paused = !s[0].paused;
            px_h2c_pause(h, s[0].st, s[0].paused);
            if (!s[0].paused)
                px_h2c_resume(h, s[0].st);
        }
        rc = px_h2c_feed(h, (const char *)data + off, n);
        flush(h);
    }
    if (!s[0].done && s[0].paused) {
        s[0].paused = 0;
        px_h2c_pause(h, s[0].st, 0);
        px_h2c_resume(h, s[0].st);
    }
    (void)px_h2c_can_open(h);
    (void)px_h2c_reason(h);
    if (rc != 0)
        px_h2c_fail_all(h, "session failed");
    for (int i = 0; i < 4; i++)
        if (!s[i].done)
            px_h2c_close(h, s[i].st, 1);
    flush(h);
    px_h2c_free(h);
    return 0;
}
