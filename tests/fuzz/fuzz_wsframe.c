/* libFuzzer target for px_wsframe, the WebSocket frame reader that stands between a client and
 * the secret guard: any bytes, fed whole and cut where the input's first byte says (as reads
 * may cut them), must give the same events (headers, unmasked payload, ends, or the same
 * error), every payload run inside the piece fed, every byte taken exactly once. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/px_err.h"
#include "base/px_wsframe.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            abort();                                                                               \
    } while (0)

typedef struct {
    uint8_t *buf;
    size_t len, cap;
} out_t;

static void add(out_t *o, const void *p, size_t n)
{
    if (o->len + n > o->cap) {
        size_t c = o->cap ? o->cap * 2 : 1024;
        while (c < o->len + n)
            c *= 2;
        o->buf = realloc(o->buf, c);
        CHECK(o->buf != NULL);
        o->cap = c;
    }
    memcpy(o->buf + o->len, p, n);
    o->len += n;
}

/* The events of data[0..len) fed in pieces of `step` bytes (0: whole). */
static void run(const uint8_t *data, size_t len, int need_mask, size_t step, out_t *o)
{
    px_wsframe_t p;
    px_wsframe_init(&p, need_mask);
    size_t from = 0;
    while (from < len || len == 0) {
        size_t to = step == 0 || len - from < step ? len : from + step;
        /* a copy of exactly this piece, so ASan sees a read past it */
        size_t n = to - from;
        char *piece = malloc(n ? n : 1);
        CHECK(piece != NULL);
        memcpy(piece, data + from, n);
        size_t at = 0;
        for (;;) {
            size_t used, rlen;
            const char *r;
            int ev = px_wsframe_next(&p, piece + at, n - at, &used, &r, &rlen);
            CHECK(used <= n - at);
            at += used;
            if (ev < 0) {
                CHECK(ev == PX_EPARSE && p.why != NULL);
                add(o, "X", 1);
                free(piece);
                return;
            }
            if (ev == PX_WSFRAME_MORE) {
                CHECK(at == n);
                break;
            }
            if (ev == PX_WSFRAME_HEAD) {
                uint8_t h[11] = {'H', (uint8_t)p.opcode, (uint8_t)p.fin};
                memcpy(h + 3, &p.len, 8);
                add(o, h, sizeof(h));
                CHECK(!px_wsframe_is_control(p.opcode) || (p.fin && p.len <= 125));
                CHECK(!need_mask || p.masked);
            } else if (ev == PX_WSFRAME_DATA) {
                CHECK(rlen > 0 && rlen == used && r == piece + at - used);
                CHECK(p.off <= p.len);
                char *u = malloc(rlen);
                CHECK(u != NULL);
                px_wsframe_unmask(p.key, p.off - rlen, r, u, rlen);
                add(o, u, rlen);
                free(u);
            } else {
                CHECK(ev == PX_WSFRAME_END && used == 0 && p.off == p.len);
                add(o, "E", 1);
            }
        }
        free(piece);
        from = to;
        if (len == 0)
            break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 16384)
        return 0;
    int need_mask = data[0] & 1;
    size_t step = (size_t)(data[0] >> 1) + 1;
    data++;
    size--;
    out_t whole = {0}, cut = {0}, bytes = {0};
    run(data, size, need_mask, 0, &whole);
    run(data, size, need_mask, step, &cut);
    run(data, size, need_mask, 1, &bytes);
    CHECK(whole.len == cut.len && (whole.len == 0 || memcmp(whole.buf, cut.buf, whole.len) == 0));
    CHECK(whole.len == bytes.len &&
          (whole.len == 0 || memcmp(whole.buf, bytes.buf, whole.len) == 0));
    free(whole.buf);
    free(cut.buf);
    free(bytes.buf);
    return 0;
}
