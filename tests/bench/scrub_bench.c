/* Micro-benchmark of addons/addon_scrub (issue 33 part 1): the throughput of scrubbing a body
 * with 40 values configured (32 secrets of 20 to 60 bytes, 4 AWS key ids, 4 session tokens of
 * 400 bytes) against memcpy of the same body, piece by piece into one output buffer (the copy
 * a response stage makes anyway). Bodies: random bytes, base64 text, and base64 text with a
 * value planted once per MiB (replaced, so that path is timed too). Two scrub figures: with
 * every emitted view copied into the output buffer (against memcpy: the whole cost of a stage
 * that copies), and with the views only counted (a writer that sends them as they are: the
 * scan's own cost). Each figure is the best of BENCH_ROUNDS runs over the whole body.
 *
 * Not built by CMake. From the repo root, after a Release build in build/:
 *   cc -O2 -D_GNU_SOURCE -I. tests/bench/scrub_bench.c build/addons/libairlock_addons.a \
 *      build/signing/libairlock_sig.a build/addons/libairlock_toml.a \
 *      build/base/libairlock_base.a -lyaml -lidn2 -ljansson -lcrypto -lstdc++ \
 *      -o /tmp/scrub_bench
 *   /tmp/scrub_bench [MiB] [piece bytes]      (default 64 MiB in 16 KiB pieces) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "addons/addon_scrub.h"

#define BENCH_VALUES 40
#define BENCH_ROUNDS 5
#define BENCH_VALUE_MAX 512

typedef struct bench_out {
    char *p; /* NULL: views are only counted (a writer that takes them as they are) */
    size_t len;
} bench_out_t;

static uint64_t rng_state = 0x243f6a8885a308d3u;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int on_emit(void *arg, const char *data, size_t len)
{
    bench_out_t *o = arg;
    if (o->p != NULL)
        memcpy(o->p + o->len, data, len);
    o->len += len;
    return 0;
}

static const char b64c[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void fill_token(char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = b64c[rng() % 62];
}

/* Best time of BENCH_ROUNDS for scrubbing (m != NULL) or copying (m == NULL) the body. */
static double run(const addon_scrub_t *m, const char *body, size_t n, size_t piece, char *out,
                  size_t *outlen, uint64_t *replaced)
{
    double best = 1e30;
    for (int r = 0; r < BENCH_ROUNDS; r++) {
        bench_out_t o = {out, 0};
        double t0 = now_s();
        if (m == NULL) {
            for (size_t at = 0; at < n; at += piece) {
                size_t k = n - at < piece ? n - at : piece;
                memcpy(o.p + o.len, body + at, k);
                o.len += k;
            }
        } else {
            addon_scrub_stream_t *st = addon_scrub_stream_new(m);
            for (size_t at = 0; at < n; at += piece) {
                size_t k = n - at < piece ? n - at : piece;
                addon_scrub_stream_feed(st, body + at, k, on_emit, &o);
            }
            addon_scrub_stream_flush(st, on_emit, &o);
            *replaced = addon_scrub_stream_total(st);
            addon_scrub_stream_free(st);
        }
        double t = now_s() - t0;
        if (t < best)
            best = t;
        *outlen = o.len;
    }
    return best;
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
    size_t piece = argc > 2 ? strtoul(argv[2], NULL, 10) : 16384;
    if (mib == 0 || mib > 4096 || piece == 0) {
        fprintf(stderr, "usage: scrub_bench [MiB 1..4096] [piece bytes]\n");
        return 2;
    }
    static char vals[BENCH_VALUES][BENCH_VALUE_MAX], surs[BENCH_VALUES][BENCH_VALUE_MAX];
    static char names[BENCH_VALUES][16];
    addon_scrub_item_t items[BENCH_VALUES];
    for (size_t i = 0; i < BENCH_VALUES; i++) {
        size_t vl = i < 32 ? 20 + rng() % 41 : i < 36 ? 20 : 400;
        fill_token(vals[i], vl);
        fill_token(surs[i], vl);
        if (i >= 32 && i < 36) {
            memcpy(vals[i], "AKIA", 4);
            memcpy(surs[i], "AKIA", 4);
        }
        snprintf(names[i], sizeof(names[i]), "v%zu", i);
        items[i] = (addon_scrub_item_t){{names[i], strlen(names[i])}, {vals[i], vl}, {surs[i], vl}};
    }
    addon_scrub_t *m = NULL;
    if (addon_scrub_new(items, BENCH_VALUES, &m, NULL, 0, NULL) != 0) {
        fprintf(stderr, "scrub_bench: build failed\n");
        return 1;
    }
    size_t n = mib << 20;
    char *body = malloc(n);
    char *out = malloc(2 * n);
    if (body == NULL || out == NULL)
        return 1;
    printf("scrub_bench: %zu values, %zu patterns (longest %zu bytes), %zu MiB body in %zu-byte "
           "pieces, best of %d\n",
           (size_t)BENCH_VALUES, addon_scrub_pattern_count(m), addon_scrub_max_pattern_len(m), mib,
           piece, BENCH_ROUNDS);
    for (int kind = 0; kind < 3; kind++) {
        for (size_t i = 0; i < n; i++)
            body[i] = kind == 0 ? (char)rng() : b64c[rng() % 64];
        for (size_t at = 4096; kind == 2 && at + BENCH_VALUE_MAX < n; at += 1 << 20) {
            size_t v = rng() % 32;
            memcpy(body + at, vals[v], items[v].value.len);
        }
        size_t ol = 0, cl = 0, vl = 0;
        uint64_t rep = 0;
        double tc = run(NULL, body, n, piece, out, &cl, &rep);
        double ts = run(m, body, n, piece, out, &ol, &rep);
        double tv = run(m, body, n, piece, NULL, &vl, &rep);
        const char *what[] = {"random bytes", "base64 text", "base64 text, 1 value/MiB"};
        printf("%-25s memcpy %6.0f MB/s | scrub+copy %6.0f MB/s (time x%.2f) | scrub, views "
               "%6.0f MB/s (%.1f %% of memcpy's time) | replaced %llu\n",
               what[kind], (double)n / tc / 1e6, (double)n / ts / 1e6, ts / tc,
               (double)n / tv / 1e6, 100.0 * tv / tc, (unsigned long long)rep);
        if (ol != vl)
            return 1;
    }
    addon_scrub_free(m);
    free(body);
    free(out);
    return 0;
}
