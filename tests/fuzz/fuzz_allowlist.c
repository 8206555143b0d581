/* Fuzzes the allowlist loader (libyaml, the tree builder, schema checks) with arbitrary bytes,
 * then runs decisions, explanations and the summary on whatever loads, with the input itself
 * also used as a request path and host so that fuzzed patterns meet fuzzed subjects. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "addons/addon_policy.h"
#include "addons/addon_yaml.h"

#define FUZZ_HOST_MAX 256

static void fuzz_decide(const addon_policy_t *p, const char *method, const char *host, size_t hlen,
                        const char *path, size_t plen, uint16_t port, int tls)
{
    addon_policy_query_t q;
    q.method.base = method;
    q.method.len = strlen(method);
    q.host.base = host;
    q.host.len = hlen;
    q.path.base = path;
    q.path.len = plen;
    q.port = port;
    q.tls = tls;
    addon_policy_decision_t d;
    addon_policy_decide(p, &q, &d);
    char line[512];
    size_t n = addon_policy_explain(p, &q, &d, line, sizeof(line));
    if (strlen(line) != (n < sizeof(line) ? n : sizeof(line) - 1))
        __builtin_trap();
    if (d.allowed != (d.verdict == ADDON_POLICY_ALLOW))
        __builtin_trap();
    int pt;
    (void)addon_policy_has_host(p, q.host, port, tls, &pt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    addon_policy_t *p = NULL;
    char err[ADDON_YAML_ERR_MAX];
    int rc = addon_policy_load_buffer("fuzz.yaml", text, size, &p, err, sizeof(err));
    if (rc != 0) {
        if (p != NULL || strlen(err) >= sizeof(err))
            __builtin_trap();
        return 0;
    }
    char summary[4096];
    (void)addon_policy_describe(p, summary, sizeof(summary));

    static const char *const hosts[] = {"api.github.com", "EXAMPLE.com.", "[::1]", "10.0.0.1", ""};
    static const char *const paths[] = {"/",          "/repos/o/r?x=1", "/a%2Fb%zz",
                                        "/caf%C3%A9", "/a/../b",        ""};
    for (size_t h = 0; h < sizeof(hosts) / sizeof(hosts[0]); h++) {
        for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
            fuzz_decide(p, "GET", hosts[h], strlen(hosts[h]), paths[i], strlen(paths[i]), 443, 1);
            fuzz_decide(p, "post", hosts[h], strlen(hosts[h]), paths[i], strlen(paths[i]), 8443, 0);
        }
    }
    size_t hlen = size < FUZZ_HOST_MAX ? size : FUZZ_HOST_MAX;
    fuzz_decide(p, "GET", text, hlen, text, size, 443, 1);
    fuzz_decide(p, "GET", "api.github.com", strlen("api.github.com"), text, size, 80, 0);
    /* the Anthropic tool-domain trim's question, and the graphql blocks */
    (void)addon_policy_host_get_open(p, (addon_str_t){text, hlen});
    for (size_t i = 0; i < addon_policy_count(p, ADDON_POLICY_URL_PREFIXES); i++) {
        const addon_policy_graphql_t *g = addon_policy_graphql(p, i);
        if (g != NULL && g->nqueries > 0 && g->queries[0].base == NULL)
            __builtin_trap();
    }
    addon_policy_unref(p);
    return 0;
}
