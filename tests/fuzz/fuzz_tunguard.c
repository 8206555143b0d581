/* libFuzzer target for the WebSocket secret guard (proxy/px_tunguard.c) between two fake tunnel
 * ends: any client byte stream, cut into reads as the input's first byte says, must give an
 * upstream that received a prefix of the stream, in which no message and no control frame
 * carries a whole secret or canary; a stream that carries one (before any protocol error)
 * must close both ends; a clean, complete stream must arrive whole. Frames with a zero masking
 * key carry their payload as it is, so the fuzzer can write values into them. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "addons/addon_leak.h"
#include "base/px_wsframe.h"
#include "proxy/px_log.h"
#include "proxy/px_policy.h"
#include "proxy/px_tunguard.h"
#include "net/px_tunnel.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            abort();                                                                               \
    } while (0)

typedef struct {
    char *buf;
    size_t len, cap;
    int closed;
} end_t;

static void e_write(void *e, const char *d, size_t n)
{
    end_t *f = e;
    if (f->len + n > f->cap) {
        f->cap = (f->len + n) * 2 + 64;
        f->buf = realloc(f->buf, f->cap);
        CHECK(f->buf != NULL);
    }
    memcpy(f->buf + f->len, d, n);
    f->len += n;
}
static int e_full(void *e)
{
    (void)e;
    return 0;
}
static void e_read(void *e, int on)
{
    (void)e;
    (void)on;
}
static void e_nop(void *e)
{
    (void)e;
}
static void e_close(void *e)
{
    ((end_t *)e)->closed = 1;
}

static const addon_leak_t *matcher(void)
{
    static addon_leak_t *m;
    if (m == NULL) {
        static const addon_leak_item_t items[] = {
            {{"entry[0].value", 14}, {"ghp_REALVALUE0123456789abcdef", 29}, ADDON_LEAK_SECRET},
            {{"ssh-marker", 10}, {"CANARY-7f3a", 11}, ADDON_LEAK_CANARY},
        };
        CHECK(addon_leak_new(items, 2, &m, NULL, 0, NULL) == 0);
    }
    return m;
}

/* What a stream of client frames carries. Units are data messages and control frames, in
 * order; each one's payload (unmasked, its frames together) is scanned on its own. */
typedef struct {
    int whole;        /* the frames end on a boundary, no message open, no error */
    long hit_unit;    /* the unit carrying the first value (-1: none) */
    size_t hit_start; /* where in that unit's payload the value starts */
    size_t *unit_len; /* payload bytes of each unit (first nunit) */
    size_t nunit;
} scan_t;

/* The length of the pattern that matched as mt, ending at pay[0..end). */
static size_t pattern_len(const addon_leak_match_t *mt, const char *pay, size_t end)
{
    const addon_leak_t *m = matcher();
    for (size_t i = 0; i < addon_leak_pattern_count(m); i++) {
        addon_leak_enc_t enc;
        const char *name;
        addon_str_t p = addon_leak_pattern(m, i, &enc, &name);
        if (name == mt->name && enc == mt->enc && p.len <= end &&
            memcmp(pay + end - p.len, p.base, p.len) == 0)
            return p.len;
    }
    CHECK(0);
    return 0;
}

static void scan(const char *raw, size_t len, scan_t *sc)
{
    const addon_leak_t *m = matcher();
    px_wsframe_t fp;
    px_wsframe_init(&fp, 1);
    addon_leak_state_t st[2]; /* a message's, a control frame's */
    char *pay[2] = {malloc(len + 1), malloc(len + 1)};
    size_t plen[2] = {0, 0};
    long unit[2] = {-1, -1};
    memset(sc, 0, sizeof(*sc));
    sc->hit_unit = -1;
    sc->unit_len = calloc(len + 1, sizeof(size_t));
    size_t at = 0;
    for (;;) {
        size_t used, rl;
        const char *run;
        int ev = px_wsframe_next(&fp, raw + at, len - at, &used, &run, &rl);
        at += used;
        if (ev < 0)
            break;
        if (ev == PX_WSFRAME_MORE) {
            sc->whole = !fp.in_message && fp.hlen == 0 && fp.stage == 0;
            break;
        }
        int c = px_wsframe_is_control(fp.opcode);
        if (ev == PX_WSFRAME_HEAD && (c || fp.opcode != PX_WSFRAME_CONT)) {
            addon_leak_state_init(&st[c]);
            plen[c] = 0;
            unit[c] = (long)sc->nunit++;
        } else if (ev == PX_WSFRAME_DATA) {
            px_wsframe_unmask(fp.key, fp.off - rl, run, pay[c] + plen[c], rl);
            addon_leak_match_t mt;
            int hit = sc->hit_unit < 0 && addon_leak_feed(m, &st[c], pay[c] + plen[c], rl, &mt);
            plen[c] += rl;
            sc->unit_len[unit[c]] += rl;
            if (hit) {
                size_t end = (size_t)mt.end;
                sc->hit_unit = unit[c];
                sc->hit_start = end - pattern_len(&mt, pay[c], end);
            }
        }
    }
    free(pay[0]);
    free(pay[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 65536)
        return 0;
    uint32_t seed = data[0];
    data++;
    size--;
    px_snapshot_t *snap = calloc(1, sizeof(*snap));
    CHECK(snap != NULL);
    snap->refs = 2; /* never freed by the tunnel: the matcher is shared across runs */
    snap->leak = (addon_leak_t *)matcher();
    static px_log_t *log; /* a no-op sink (no such file), kept across runs */
    char err[128];
    if (log == NULL)
        CHECK(px_log_open("/nonexistent/airlock-fuzz.log", 0, &log, err, sizeof(err)) == 0);
    px_tunnel_t *t = px_tunnel_new();
    CHECK(t != NULL);
    CHECK(px_tunguard_ws(t, log, "GET http://h/ -> 101", snap, NULL, snap->leak) == 0);
    end_t cl = {0}, up = {0};
    px_tunnel_end_t a = {e_write, e_full, e_read, e_nop, e_close, e_close, &cl}; /* finish too */
    px_tunnel_end_t b = {e_write, e_full, e_read, e_nop, e_nop, e_close, &up};
    px_tunnel_attach(t, 0, &a);
    px_tunnel_attach(t, 1, &b);
    for (size_t at = 0; at < size && !cl.closed;) {
        seed = seed * 1103515245u + 12345u;
        size_t n = 1 + (seed >> 16) % ((data[-1] & 7) == 0 ? 4096 : 1u << (data[-1] & 7));
        if (n > size - at)
            n = size - at;
        px_tunnel_data(t, 0, (const char *)data + at, n);
        at += n;
    }
    CHECK(up.len <= size && (up.len == 0 || memcmp(up.buf, data, up.len) == 0));
    CHECK(cl.len == 0 || (cl.len == 22 && memcmp(cl.buf, "\x88\x14\x03\xf0", 4) == 0));
    scan_t in, out;
    scan((const char *)data, size, &in);
    scan(up.buf, up.len, &out);
    CHECK(out.hit_unit < 0); /* no whole value went */
    if (in.hit_unit >= 0) {
        CHECK(cl.closed && up.closed);
        /* nor any byte of it: the unit carrying it went at most up to where the value starts */
        if ((size_t)in.hit_unit < out.nunit)
            CHECK(out.unit_len[in.hit_unit] <= in.hit_start);
    } else if (in.whole && !cl.closed) {
        CHECK(up.len == size);
    }
    free(in.unit_len);
    free(out.unit_len);
    px_tunnel_release(t, 0);
    px_tunnel_release(t, 1);
    free(snap);
    free(cl.buf);
    free(up.buf);
    return 0;
}
