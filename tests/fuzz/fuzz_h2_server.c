/* Fuzzes the HTTP/2 server codec (px_h2.c): arbitrary bytes after the client connection preface,
 * fed in pieces whose size the first byte picks, with every request stream answered (an interim
 * 103 on some, a body and the request's trailers echoed back on others, a reset on some), so the
 * response path, the queues and the flow control run too. Each head is checked for spans inside
 * its buffer and run through the pre-checks, as the engine would. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "http/px_h2.h"
#include "proxy/px_precheck.h"

typedef struct fz {
    px_h2_t *h;
    size_t requests;
} fz_t;

static void check_span(const px_msg_t *m, px_span_t s)
{
    if ((size_t)s.off + s.len > m->len)
        __builtin_trap();
}

static void on_request(void *o, int32_t sid, px_msg_t *m, const px_h2_req_t *rq)
{
    fz_t *f = o;
    f->requests++;
    for (size_t i = 0; i < m->n; i++) {
        check_span(m, m->names[i]);
        check_span(m, m->values[i]);
    }
    check_span(m, m->target);
    check_span(m, rq->scheme);
    check_span(m, rq->authority);
    check_span(m, rq->protocol);
    px_pre_ctx_t ctx = {.kind = PX_LISTEN_HTTPS, .tls = 1, .sni = "example.com", .tunnel = ""};
    px_pre_t pre;
    px_precheck(m, &ctx, &pre);
    px_msg_free(m);
    px_h2_field_t fl[] = {{"Content-Type", 12, "text/plain", 10}, {"Connection", 10, "x", 1}};
    if (sid % 7 == 0) {
        px_h2_reset(f->h, sid, PX_H2_CANCEL);
        return;
    }
    if (sid % 5 == 0)
        px_h2_respond(f->h, sid, 103, fl, 1, 0);
    if (sid % 3 == 0) {
        px_h2_respond(f->h, sid, 204, fl, 2, 0);
        return;
    }
    if (px_h2_respond(f->h, sid, 200, fl, 2, 1) == 0)
        px_h2_send_data(f->h, sid, "hello", 5);
}

static void on_data(void *o, int32_t sid, const char *data, size_t len)
{
    fz_t *f = o;
    if (sid % 11 != 0) /* some streams never consume: their windows close */
        px_h2_consume(f->h, sid, len);
    px_h2_send_data(f->h, sid, data, len > 100 ? 100 : len);
}

static void on_end(void *o, int32_t sid, const px_fields_t *t)
{
    fz_t *f = o;
    px_h2_end(f->h, sid, t);
}

static void on_reset(void *o, int32_t sid, uint32_t code)
{
}

static void on_drain(void *o, int32_t sid)
{
}

static const px_h2_cbs_t cbs = {on_request, on_data, on_end, on_reset, on_drain, NULL};

static void flush(px_h2_t *h)
{
    const char *out;
    size_t len;
    for (int i = 0; i < 64; i++)
        if (px_h2_take_output(h, &out, &len) != 0 || len == 0)
            break;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t piece = (size_t)data[0] * 4 + 1;
    data++;
    size--;
    fz_t f = {0};
    f.h = px_h2_new(&cbs, &f);
    if (f.h == NULL)
        return 0;
    static const char magic[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    int rc = px_h2_feed(f.h, magic, sizeof(magic) - 1);
    for (size_t off = 0; rc == 0 && off < size; off += piece) {
        size_t n = size - off < piece ? size - off : piece;
        rc = px_h2_feed(f.h, (const char *)data + off, n);
        flush(f.h);
    }
    flush(f.h);
    (void)px_h2_done(f.h);
    (void)px_h2_reason(f.h);
    px_h2_free(f.h);
    return 0;
}
