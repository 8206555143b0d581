/* proxy/px_tunguard: the secret guard on a WebSocket's client frames, between two fake tunnel
 * ends. Clean frames of every shape, cut into random reads, reach the upstream byte for byte;
 * a value anywhere in a message (raw or base64, in one frame or spread over one-byte frames
 * with control frames between them, in a ping) closes both ends and no byte of it, nor any
 * byte from the start of the value on, reaches the upstream; frames piling up behind a
 * possible value hit the cap. The client gets a close frame (1008) unless the upstream is in the
 * middle of a frame to it.
 * `test_px_tunguard --bench [MiB]` instead prints the guard's speed on a WebSocket upload of
 * random text in 64 KiB frames and 64 KiB reads (1 GiB by default), in CPU time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "addons/addon_leak.h"
#include "addons/addon_scrub.h"
#include "base/px_wsframe.h"
#include "proxy/px_log.h"
#include "proxy/px_policy.h"
#include "proxy/px_tunguard.h"
#include "net/px_tunnel.h"

#define SECRET "ghp_REALVALUE0123456789abcdefREALVALUE"
#define SURR "ghp_SURROGATE"

typedef struct fake_end {
    char *buf;
    size_t len, cap;
    int closed, finished, shut;
} fake_end_t;

static void end_write(void *e, const char *data, size_t len)
{
    fake_end_t *f = e;
    if (f->len + len > f->cap) {
        f->cap = (f->len + len) * 2 + 1024;
        f->buf = realloc(f->buf, f->cap);
    }
    memcpy(f->buf + f->len, data, len);
    f->len += len;
}
static int end_full(void *e)
{
    (void)e;
    return 0;
}
static void end_read(void *e, int on)
{
    (void)e;
    (void)on;
}
static void end_shutdown(void *e)
{
    ((fake_end_t *)e)->shut = 1;
}
static void end_finish(void *e)
{
    ((fake_end_t *)e)->finished = 1;
}
static void end_close(void *e)
{
    ((fake_end_t *)e)->closed = 1;
}

typedef struct rig {
    px_snapshot_t *snap;
    px_log_t *log;
    px_tunnel_t *t;
    fake_end_t cl, up;
    char logpath[128];
} rig_t;

/* scrub: the snapshot also has a response scrubber (SECRET -> SURR). */
static void rig_open_scrub(rig_t *r, int scrub)
{
    memset(r, 0, sizeof(*r));
    static const addon_leak_item_t items[] = {
        {{"entry[0].value", 14}, {SECRET, sizeof(SECRET) - 1}, ADDON_LEAK_SECRET},
        {{"ssh-marker", 10}, {"CANARY-7f3a9c-do-not-send", 25}, ADDON_LEAK_CANARY},
    };
    r->snap = calloc(1, sizeof(*r->snap));
    r->snap->refs = 1;
    assert_int_equal(addon_leak_new(items, 2, &r->snap->leak, NULL, 0, NULL), 0);
    if (scrub) {
        addon_scrub_item_t it = {
            {"entry[0].value", 14}, {SECRET, sizeof(SECRET) - 1}, {SURR, sizeof(SURR) - 1}};
        assert_int_equal(addon_scrub_new(&it, 1, &r->snap->scrub, NULL, 0, NULL), 0);
    }
    snprintf(r->logpath, sizeof(r->logpath), "/tmp/airlock-test-tunguard.%d.%ld", (int)getpid(),
             random());
    char err[200];
    assert_int_equal(px_log_open(r->logpath, 1, &r->log, err, sizeof(err)), 0);
    r->t = px_tunnel_new();
    assert_int_equal(
        px_tunguard_ws(r->t, r->log, "GET http://h/ws -> 101", r->snap, NULL, r->snap->leak), 0);
    px_tunnel_end_t a = {end_write,  end_full,  end_read, end_shutdown,
                         end_finish, end_close, &r->cl};
    px_tunnel_end_t b = {end_write,  end_full,  end_read, end_shutdown,
                         end_finish, end_close, &r->up};
    px_tunnel_attach(r->t, 0, &a);
    px_tunnel_attach(r->t, 1, &b);
}

static void rig_open(rig_t *r)
{
    rig_open_scrub(r, 0);
}

/* Frees the rig; the log's text in *logtext (malloc'd) when asked. */
static void rig_close(rig_t *r, char **logtext)
{
    px_tunnel_release(r->t, 0);
    px_tunnel_release(r->t, 1);
    px_snapshot_unref(r->snap);
    px_log_close(r->log);
    if (logtext != NULL) {
        FILE *f = fopen(r->logpath, "rb");
        *logtext = calloc(1, 4096);
        size_t n = fread(*logtext, 1, 4095, f);
        (*logtext)[n] = '\0';
        fclose(f);
    }
    unlink(r->logpath);
    free(r->cl.buf);
    free(r->up.buf);
}

static uint32_t rnd_state = 12345;
static uint32_t rnd(void)
{
    rnd_state = rnd_state * 1103515245u + 12345u;
    return rnd_state >> 8;
}

/* Feeds in[0..len) as the client, in random reads of 1 to max bytes. */
static void feed(rig_t *r, const uint8_t *in, size_t len, size_t max)
{
    for (size_t at = 0; at < len && !r->cl.closed && !r->cl.finished;) {
        size_t n = 1 + rnd() % max;
        if (n > len - at)
            n = len - at;
        px_tunnel_data(r->t, 0, (const char *)in + at, n);
        at += n;
    }
}

static size_t put(uint8_t *buf, size_t n, int fin, int op, const char *pl, size_t len)
{
    uint8_t key[4] = {(uint8_t)rnd(), (uint8_t)rnd(), (uint8_t)rnd(), (uint8_t)rnd()};
    buf[n++] = (uint8_t)((fin ? 0x80 : 0) | op);
    if (len < 126) {
        buf[n++] = (uint8_t)(0x80 | len);
    } else if (len < 65536) {
        buf[n++] = 0x80 | 126;
        buf[n++] = (uint8_t)(len >> 8);
        buf[n++] = (uint8_t)len;
    } else {
        buf[n++] = 0x80 | 127;
        for (int i = 7; i >= 0; i--)
            buf[n++] = (uint8_t)((uint64_t)len >> (8 * i));
    }
    memcpy(buf + n, key, 4);
    n += 4;
    for (size_t i = 0; i < len; i++)
        buf[n++] = (uint8_t)(pl[i] ^ key[i % 4]);
    return n;
}

/* A message of len payload bytes (pl) as frames of 1 to maxf bytes, with a ping between
 * fragments now and then. */
static size_t put_message(uint8_t *buf, size_t n, const char *pl, size_t len, size_t maxf)
{
    size_t at = 0;
    int first = 1;
    do {
        size_t k = maxf == 0 ? len : 1 + rnd() % maxf;
        if (k > len - at)
            k = len - at;
        n = put(buf, n, at + k == len, first ? PX_WSFRAME_TEXT : PX_WSFRAME_CONT, pl + at, k);
        first = 0;
        at += k;
        if (at < len && rnd() % 4 == 0)
            n = put(buf, n, 1, PX_WSFRAME_PING, "pi", 2);
    } while (at < len);
    return n;
}

/* The data payload of the raw frames in raw[0..len) (a truncated last frame counts as far as
 * it goes). */
static char *payload(const char *raw, size_t len, size_t *out)
{
    char *p = malloc(len + 1);
    px_wsframe_t fp;
    px_wsframe_init(&fp, 1);
    size_t at = 0, o = 0;
    for (;;) {
        size_t used, rl;
        const char *run;
        int ev = px_wsframe_next(&fp, raw + at, len - at, &used, &run, &rl);
        at += used;
        assert_true(ev >= 0);
        if (ev == PX_WSFRAME_MORE)
            break;
        if (ev == PX_WSFRAME_DATA && !px_wsframe_is_control(fp.opcode)) {
            px_wsframe_unmask(fp.key, fp.off - rl, run, p + o, rl);
            o += rl;
        }
    }
    *out = o;
    return p;
}

static void test_px_tunguard_clean_frames_pass_whole(void **state)
{
    (void)state;
    size_t cap = 400000;
    uint8_t *in = malloc(cap);
    char *text = malloc(100000);
    for (size_t i = 0; i < 100000; i++)
        text[i] = (char)('A' + rnd() % 58); /* letters and some punctuation: prefixes of base64 */
    for (int round = 0; round < 40; round++) {
        rig_t r;
        rig_open(&r);
        size_t n = 0;
        n = put_message(in, n, text, 1 + rnd() % 300, round % 3 == 0 ? 1 : 40);
        n = put(in, n, 1, PX_WSFRAME_TEXT, "", 0);
        n = put_message(in, n, text + 7, 70000, round % 2 ? 0 : 9000);
        n = put(in, n, 1, PX_WSFRAME_PING, "", 0);
        n = put_message(in, n, "ghp_REALVALUE0123", 17, 3); /* a prefix only, then its end */
        n = put(in, n, 1, PX_WSFRAME_CLOSE, "\x03\xe8", 2);
        assert_true(n < cap);
        feed(&r, in, n, round % 2 ? 7 : 20000);
        assert_false(r.cl.closed);
        assert_false(r.up.closed);
        assert_int_equal(r.up.len, n);
        assert_memory_equal(r.up.buf, in, n);
        rig_close(&r, NULL);
    }
    free(text);
    free(in);
}

/* A value at a random place of a message cut into frames of 1 to maxf bytes, fed in reads of
 * 1 to maxr bytes: closed, and the upstream has no payload byte from the value's start on. */
static void leak_case(const char *value, size_t maxf, size_t maxr, const char *want_log)
{
    char msg[2000];
    size_t pre = rnd() % 900;
    for (size_t i = 0; i < pre; i++)
        msg[i] = (char)('a' + rnd() % 26);
    size_t vl = strlen(value);
    memcpy(msg + pre, value, vl);
    memcpy(msg + pre + vl, "-tail", 5);
    size_t len = pre + vl + 5;
    uint8_t *in = malloc(len * 16 + 1000);
    size_t n = put(in, 0, 1, PX_WSFRAME_TEXT, "before", 6);
    n = put_message(in, n, msg, len, maxf);
    rig_t r;
    rig_open(&r);
    feed(&r, in, n, maxr);
    assert_true(r.cl.finished); /* the client gets the close frame, then the end */
    assert_false(r.cl.closed);
    assert_true(r.up.closed);
    assert_int_equal(r.cl.len, 22);
    assert_memory_equal(r.cl.buf,
                        "\x88\x14\x03\xf0"
                        "blocked by airlock",
                        22);
    assert_true(r.up.len <= n);
    assert_memory_equal(r.up.buf, in, r.up.len);
    size_t pl;
    char *got = payload(r.up.buf, r.up.len, &pl);
    assert_true(pl <= 6 + pre); /* "before", then at most the bytes before the value */
    free(got);
    char *log;
    rig_close(&r, &log);
    assert_non_null(strstr(log, want_log));
    assert_null(strstr(log, value));
    free(log);
    free(in);
}

static void test_px_tunguard_leaks_never_leave(void **state)
{
    (void)state;
    const char *want = "BLOCKED GET http://h/ws -> 101 (leak: secret entry[0].value, raw, in a "
                       "WebSocket message; the WebSocket was closed with 1008)";
    for (int i = 0; i < 30; i++) {
        leak_case(SECRET, 0, 1 + rnd() % 3000, want); /* one frame, reads of any size */
        leak_case(SECRET, 1, 1 + rnd() % 50, want);   /* one-byte frames, pings between */
        leak_case(SECRET, 5, 1 + rnd() % 10, want);
        leak_case("CANARY-7f3a9c-do-not-send", 3, 1 + rnd() % 40,
                  "(leak: canary ssh-marker, raw, in a WebSocket message;");
        leak_case("Z2hwX1JFQUxWQUxVRTAxMjM0NTY3ODlhYmNkZWZSRUFMVkFMVUU", 2, 1 + rnd() % 40,
                  ", base64, in a WebSocket message;");
    }
}

static void test_px_tunguard_ping_and_cap(void **state)
{
    (void)state;
    uint8_t in[300];
    rig_t r;
    rig_open(&r);
    size_t n = put(in, 0, 1, PX_WSFRAME_PING, "CANARY-7f3a9c-do-not-send", 25);
    feed(&r, in, n, 3);
    assert_true(r.cl.finished && r.up.closed);
    assert_true(r.up.len < 6); /* at most the part of the header that came alone */
    char *log;
    rig_close(&r, &log);
    assert_non_null(strstr(log, "(leak: canary ssh-marker, raw, in a WebSocket ping; the "
                                "WebSocket was closed with 1008)"));
    free(log);

    /* a possible value begun, then empty continuation frames past the cap */
    rig_open(&r);
    n = put(in, 0, 0, PX_WSFRAME_TEXT, "ghp_REAL", 8);
    feed(&r, in, n, 100);
    uint8_t empty[6];
    size_t e = put(empty, 0, 0, PX_WSFRAME_CONT, "", 0);
    for (int i = 0; i < 20000 && !r.cl.finished; i++)
        px_tunnel_data(r.t, 0, (const char *)empty, e);
    assert_true(r.cl.finished && r.up.closed);
    assert_true(r.up.len <= 6); /* the first frame's header: its payload may begin a value */
    rig_close(&r, &log);
    assert_non_null(strstr(log, "(websocket: too many bytes of frames held behind a possible "
                                "secret; the WebSocket was closed with 1008)"));
    free(log);
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int bench(size_t mib)
{
    size_t fl = 65536, nf = 16;
    char *text = malloc(fl);
    for (size_t i = 0; i < fl; i++)
        text[i] = (char)('A' + rnd() % 58);
    uint8_t *in = malloc(nf * (fl + 14));
    size_t n = 0;
    for (size_t i = 0; i < nf; i++)
        n = put(in, n, 1, PX_WSFRAME_BINARY, text, fl);
    rig_t r;
    rig_open(&r);
    size_t rounds = mib * 1024 * 1024 / (nf * fl);
    double t0 = cpu_s();
    for (size_t k = 0; k < rounds; k++) {
        for (size_t at = 0; at < n; at += 65536)
            px_tunnel_data(r.t, 0, (const char *)in + at, n - at < 65536 ? n - at : 65536);
        r.up.len = 0; /* the fake upstream keeps only the last round */
    }
    double dt = cpu_s() - t0;
    printf("WebSocket guard: %zu MiB of frames in %.3f s of CPU: %.2f GB/s (closed: %d)\n",
           rounds * nf * fl / (1024 * 1024), dt, (double)(rounds * n) / dt / 1e9, r.cl.closed);
    rig_close(&r, NULL);
    free(in);
    free(text);
    return 0;
}

/* The upstream is in the middle of a frame to the client: no close frame can go; both end. */
static void test_px_tunguard_no_close_frame_mid_frame(void **state)
{
    (void)state;
    rig_t r;
    rig_open(&r);
    static const char part[] = "\x82\x7e\x01\x00"
                               "0123456789"; /* 10 of 256 bytes */
    px_tunnel_data(r.t, 1, part, sizeof(part) - 1);
    uint8_t in[200];
    size_t n = put(in, 0, 1, PX_WSFRAME_TEXT, "x" SECRET, sizeof(SECRET));
    feed(&r, in, n, 1000);
    assert_true(r.cl.closed && r.up.closed);
    assert_false(r.cl.finished);
    assert_int_equal(r.cl.len, sizeof(part) - 1);
    char *log;
    rig_close(&r, &log);
    assert_non_null(strstr(log, "in a WebSocket message; the WebSocket was closed)\n"));
    free(log);
}

/* With a scrubber, the upstream's frames reach the client with the value replaced (a value cut
 * across two reads and two fragments), the log names the entry, and the tunnel may outlive the
 * reference its opener held on the snapshot (a SIGHUP swapped it): the scrubber's matcher
 * stays alive until the tunnel is freed. */
static void test_px_tunguard_scrubs_upstream_frames(void **state)
{
    (void)state;
    rig_t r;
    rig_open_scrub(&r, 1);
    px_snapshot_unref(r.snap); /* only the tunnel's reference is left, as after a SIGHUP */
    r.snap = NULL;
    static const char f1[] = "\x01\x0a"
                             "a:ghp_REAL";
    static const char f2[] = "\x80\x1e"
                             "VALUE0123456789abcdefREALVALUE";
    px_tunnel_data(r.t, 1, f1, 7);
    px_tunnel_data(r.t, 1, f1 + 7, sizeof(f1) - 1 - 7);
    px_tunnel_data(r.t, 1, f2, sizeof(f2) - 1);
    char *got = malloc(r.cl.len + 1);
    size_t n = 0;
    px_wsframe_t fp;
    px_wsframe_init(&fp, 0);
    for (size_t at = 0;;) {
        size_t used, rl;
        const char *run;
        int ev = px_wsframe_next(&fp, r.cl.buf + at, r.cl.len - at, &used, &run, &rl);
        assert_true(ev >= 0);
        at += used;
        if (ev == PX_WSFRAME_MORE)
            break;
        if (ev == PX_WSFRAME_DATA) {
            memcpy(got + n, run, rl);
            n += rl;
        }
    }
    assert_int_equal(n, sizeof("a:" SURR) - 1);
    assert_memory_equal(got, "a:" SURR, n);
    free(got);
    assert_false(r.cl.closed);
    char *text;
    rig_close(&r, &text); /* frees the guard, its scrubber, then the snapshot's last reference */
    assert_non_null(strstr(text, "websocket: from the upstream [scrubbed: 1 entry[0].value]"));
    assert_null(strstr(text, SECRET));
    free(text);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--bench") == 0)
        return bench(argc > 2 ? (size_t)strtoul(argv[2], NULL, 10) : 1024);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_px_tunguard_clean_frames_pass_whole),
        cmocka_unit_test(test_px_tunguard_leaks_never_leave),
        cmocka_unit_test(test_px_tunguard_ping_and_cap),
        cmocka_unit_test(test_px_tunguard_no_close_frame_mid_frame),
        cmocka_unit_test(test_px_tunguard_scrubs_upstream_frames),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
