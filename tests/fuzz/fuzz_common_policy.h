/* Shared by the allowlist-format fuzz targets: decide a fixed set of requests (plus the input
 * itself as a host) under a loaded policy and under its --print-effective text read back as a
 * native allowlist; any difference, a reload failure or a bad text length traps. */
#ifndef FUZZ_COMMON_POLICY_H
#define FUZZ_COMMON_POLICY_H

#include <stdlib.h>
#include <string.h>

#include "addons/addon_policy.h"

#define FUZZ_HOST_MAX 256

static int fuzz_allowed(const addon_policy_t *p, const char *host, size_t hlen, uint16_t port,
                        const char *method)
{
    addon_policy_query_t q = {
        .method = {method, strlen(method)},
        .host = {host, hlen},
        .path = {"/x", 2},
        .port = port,
        .tls = 1,
    };
    addon_policy_decision_t d;
    addon_policy_decide(p, &q, &d);
    char line[512];
    size_t n = addon_policy_explain(p, &q, &d, line, sizeof(line));
    if (strlen(line) != (n < sizeof(line) ? n : sizeof(line) - 1))
        __builtin_trap();
    if (d.verdict == ADDON_POLICY_BLOCK_LISTED) {
        char msg[512];
        (void)addon_policy_block_message(p, d.index, msg, sizeof(msg));
    }
    int pt;
    return d.allowed * 2 + addon_policy_has_host(p, q.host, port, 1, &pt);
}

static void fuzz_policy_roundtrip(const addon_policy_t *p, const uint8_t *data, size_t size)
{
    static const char *const hosts[] = {
        "github.com",
        "api.github.com",
        "GitHub.com.",
        "a.b.example.com",
        "example.com",
        "xn--bcher-kva.example",
        "10.0.0.1",
        "[::1]",
        "sso.internal",
        "api.anthropic.com",
        "api.openai.com",
        "x",
        "",
    };
    static const uint16_t ports[] = {443, 8443};
    size_t need = addon_policy_print_effective(p, NULL, 0);
    char *text = malloc(need + 1);
    if (text == NULL)
        return;
    if (addon_policy_print_effective(p, text, need + 1) != need || strlen(text) != need)
        __builtin_trap();
    char sum[2048];
    (void)addon_policy_describe(p, sum, sizeof(sum));
    addon_policy_t *back = NULL;
    char err[512];
    if (addon_policy_load_buffer_as("effective.yaml", text, need, ADDON_POLICY_FORMAT_AUTO, &back,
                                    err, sizeof(err)) != 0)
        __builtin_trap(); /* the effective text must always load */
    for (size_t h = 0; h < sizeof(hosts) / sizeof(hosts[0]); h++) {
        for (size_t i = 0; i < sizeof(ports) / sizeof(ports[0]); i++) {
            if (fuzz_allowed(p, hosts[h], strlen(hosts[h]), ports[i], "GET") !=
                fuzz_allowed(back, hosts[h], strlen(hosts[h]), ports[i], "GET"))
                __builtin_trap();
        }
    }
    /* The input's first line as a host meets the patterns it wrote. */
    size_t hlen = 0;
    while (hlen < size && hlen < FUZZ_HOST_MAX && data[hlen] != '\n')
        hlen++;
    const char *h = (const char *)data;
    if (fuzz_allowed(p, h, hlen, 443, "POST") != fuzz_allowed(back, h, hlen, 443, "POST"))
        __builtin_trap();
    addon_policy_unref(back);
    free(text);
}

#endif
