/* Micro-benchmark of ca/: mean cost of minting a leaf and of a cache hit.
 *
 * Not built by CMake. From the repo root, after a build in build-bench:
 *   cc -O2 -D_GNU_SOURCE -I. tests/bench/ca_mint_bench.c build-bench/ca/libairlock_ca.a \
 *      build-bench/base/libairlock_base.a -lcrypto -o /tmp/ca_mint_bench
 *   /tmp/ca_mint_bench /tmp/bench-confdir [mints]
 * The confdir is created with an EC P-256 CA when it holds none; point it at a mitmproxy
 * confdir to measure with mitmproxy's RSA-2048 CA, or at one made by `airlock ca init
 * --per-conversation` (an allowlist that permits example.com) to measure the name-constraint
 * check that such a CA adds to every mint. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ca/ca.h"

#define BENCH_DEFAULT_MINTS 5000
#define BENCH_MAX_MINTS 10000000
#define BENCH_HITS 1000000

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
    char err[CA_ERR_LEN];
    char name[64];
    ca_t *ca = NULL;
    ca_leaf_t *leaf = NULL;
    long mints = BENCH_DEFAULT_MINTS;

    if (argc < 2) {
        fprintf(stderr, "usage: %s CONFDIR [mints]\n", argv[0]);
        return 2;
    }
    if (argc > 2) {
        char *end = NULL;
        mints = strtol(argv[2], &end, 10);
        if (end == argv[2] || *end != '\0' || mints < 1 || mints > BENCH_MAX_MINTS) {
            fprintf(stderr, "mints must be 1..%d\n", BENCH_MAX_MINTS);
            return 2;
        }
    }
    if (ca_load(&ca, argv[1], CA_CREATE, 0, err, sizeof(err)) != 0) {
        fprintf(stderr, "ca_load: %s\n", err);
        return 1;
    }

    double t0 = now_us();
    for (long i = 0; i < mints; i++) {
        snprintf(name, sizeof(name), "host%ld.bench.example.com", i);
        if (ca_mint_leaf(ca, name, strlen(name), &leaf) != 0) {
            fprintf(stderr, "mint failed\n");
            return 1;
        }
        ca_leaf_release(leaf);
    }
    double mint_us = (now_us() - t0) / (double)mints;

    if (ca_leaf_acquire(ca, "cached.example.com", 18, &leaf) != 0) {
        return 1;
    }
    ca_leaf_release(leaf);
    t0 = now_us();
    for (long i = 0; i < BENCH_HITS; i++) {
        if (ca_leaf_acquire(ca, "cached.example.com", 18, &leaf) != 0) {
            return 1;
        }
        ca_leaf_release(leaf);
    }
    double hit_ns = (now_us() - t0) * 1e3 / BENCH_HITS;

    printf("CA key %s: mint %.1f us/leaf over %ld mints; cache hit %.0f ns\n",
           EVP_PKEY_get0_type_name(X509_get0_pubkey(ca_get_cert(ca))), mint_us, mints, hit_ns);
    ca_free(ca);
    return 0;
}
