/* libFuzzer target for px_wsscrub, the rewriter of the upstream's WebSocket frames: any bytes
 * (after a first byte that says where to cut them), fed whole, cut into two reads there, and
 * byte by byte, must give the same output and the same verdict; the output must be unmasked,
 * well-formed frames in the shortest length form, holding no value, whose messages are the
 * input's scrubbed as a whole (a failed feed: the ones before the failure). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "addons/addon_scrub.h"
#include "base/px_err.h"
#include "base/px_wsframe.h"
#include "proxy/px_wsscrub.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            abort();                                                                               \
    } while (0)

#define V1 "SECRETvalue1"
#define V2 "tok+en/AB="

typedef struct out {
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
    if (n > 0)
        memcpy(o->buf + o->len, p, n);
    o->len += n;
}

static int collect(void *arg, const char *data, size_t len)
{
    add(arg, data, len);
    return 0;
}

static const addon_scrub_t *matcher(void)
{
    static addon_scrub_t *m;
    if (m == NULL) {
        addon_scrub_item_t items[2] = {
            {{"a", 1}, {V1, sizeof(V1) - 1}, {"s1", 2}},
            {{"b", 1}, {V2, sizeof(V2) - 1}, {"a-much-longer-surrogate", 23}},
        };
        CHECK(addon_scrub_new(items, 2, &m, NULL, 0, NULL) == 0);
    }
    return m;
}

/* Feeds data in pieces (cut: two reads; step: pieces of step bytes); the verdict. */
static int run(const uint8_t *data, size_t len, size_t cut, size_t step, out_t *o)
{
    px_wsscrub_t *w = px_wsscrub_new(matcher());
    CHECK(w != NULL);
    int rc = 0;
    for (size_t from = 0; from < len && rc == 0;) {
        size_t to = step ? (len - from < step ? len : from + step) : (cut > from ? cut : len);
        if (to > len)
            to = len;
        char *piece = malloc(to - from); /* exactly this piece, so ASan sees a read past it */
        CHECK(piece != NULL);
        memcpy(piece, data + from, to - from);
        rc = px_wsscrub_feed(w, piece, to - from, collect, o);
        free(piece);
        from = to;
    }
    CHECK(rc == 0 || (rc == PX_EPARSE && px_wsscrub_why(w) != NULL));
    px_wsscrub_free(w);
    return rc;
}

/* No value in a message's or control frame's payload. */
static void check_clean(const out_t *u)
{
    if (u->len == 0)
        return;
    CHECK(memmem(u->buf, u->len, V1, sizeof(V1) - 1) == NULL);
    CHECK(memmem(u->buf, u->len, V2, sizeof(V2) - 1) == NULL);
}

/* The output's frames: well formed, shortest lengths, unmasked, no RSV bit, and no value in
 * a message (whole) or a control frame. */
static void check_frames(const out_t *o)
{
    px_wsframe_t fp;
    px_wsframe_init(&fp, 0);
    out_t msg = {0}, ctl = {0};
    size_t at = 0, frame_at = 0;
    for (;;) {
        size_t used, rlen;
        const char *r;
        const char *from = o->len > 0 ? (const char *)o->buf + at : "";
        int ev = px_wsframe_next(&fp, from, o->len - at, &used, &r, &rlen);
        CHECK(ev >= 0);
        at += used;
        if (ev == PX_WSFRAME_MORE)
            break;
        if (ev == PX_WSFRAME_HEAD) {
            CHECK(!fp.masked);
            CHECK(at - frame_at == (fp.len < 126 ? 2u : fp.len <= 0xFFFF ? 4u : 10u));
            if (px_wsframe_is_control(fp.opcode))
                ctl.len = 0;
            else if (fp.opcode != PX_WSFRAME_CONT)
                msg.len = 0;
        } else if (ev == PX_WSFRAME_DATA) {
            add(px_wsframe_is_control(fp.opcode) ? &ctl : &msg, r, rlen);
        } else {
            frame_at = at;
            if (px_wsframe_is_control(fp.opcode))
                check_clean(&ctl);
            else if (fp.message_end)
                check_clean(&msg);
        }
    }
    CHECK(at == o->len && frame_at == o->len); /* only whole frames */
    free(msg.buf);
    free(ctl.buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 200000)
        return 0;
    size_t cut = 1 + data[0] * (size - 1) / 256;
    data++;
    size--;
    out_t a = {0}, b = {0}, c = {0};
    int ra = run(data, size, 0, 0, &a);
    int rb = run(data, size, cut, 0, &b);
    int rc = size <= 4096 ? run(data, size, 0, 1, &c) : ra;
    CHECK(ra == rb && ra == rc);
    CHECK(a.len == b.len && (a.len == 0 || memcmp(a.buf, b.buf, a.len) == 0));
    if (size <= 4096)
        CHECK(a.len == c.len && (a.len == 0 || memcmp(a.buf, c.buf, a.len) == 0));
    check_frames(&a);
    free(a.buf);
    free(b.buf);
    free(c.buf);
    return 0;
}
