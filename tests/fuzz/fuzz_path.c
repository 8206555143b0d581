/* Fuzzes the readings of a path (base/px_path) and the policy's use of them: a reading never
 * grows, a transformation outside px_path_changes changes nothing, every reading is a fixed
 * point of itself (reading it again changes nothing), and a path the policy allows has every
 * reading allowed when asked for on its own (no reading hides a block entry). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "addons/addon_policy.h"
#include "base/px_path.h"

#define FUZZ_PATH_MAX 4096

static addon_policy_t *fuzz_policy(void)
{
    static addon_policy_t *p;
    if (p == NULL) {
        static const char yaml[] = "domains: [a.test]\n"
                                   "block:\n"
                                   "  - {host: a.test, path: \"/admin/*\"}\n"
                                   "  - {host: a.test, path: \"*/secret\"}\n"
                                   "url_prefixes:\n"
                                   "  - {host: b.test, path: \"/pub/*\"}\n"
                                   "  - {host: b.test, path: \"/x;v=1/*\"}\n";
        char err[512];
        if (addon_policy_load_buffer("fuzz.yaml", yaml, sizeof(yaml) - 1, &p, err, sizeof(err)))
            abort();
    }
    return p;
}

static int fuzz_allowed(const char *host, const char *path, size_t len)
{
    addon_policy_query_t q = {.method = {"GET", 3},
                              .host = {host, strlen(host)},
                              .path = {path, len},
                              .port = 443,
                              .tls = 1};
    addon_policy_decision_t d;
    addon_policy_decide(fuzz_policy(), &q, &d);
    if (d.allowed != (d.verdict == ADDON_POLICY_ALLOW))
        __builtin_trap();
    return d.allowed;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FUZZ_PATH_MAX)
        return 0;
    const char *d = (const char *)data;
    unsigned changes = px_path_changes(d, size);
    char out[FUZZ_PATH_MAX], again[FUZZ_PATH_MAX];
    for (unsigned how = 0; how <= PX_PATH_ALL; how++) {
        size_t n = px_path_reading(d, size, how, out);
        if (n > size)
            __builtin_trap();
        if (!px_path_worth(changes, how)) {
            /* what the changes leave out does nothing */
            size_t m = px_path_reading(d, size, how & changes, again);
            if (m != n || memcmp(out, again, n) != 0)
                __builtin_trap();
        }
        size_t m = px_path_reading(out, n, how, again);
        if (m != n || memcmp(out, again, n) != 0)
            __builtin_trap();
    }
    /* the policy: without '%' or '?' the readings are the raw path's, so an allowed path has
     * each of its readings allowed as a path of its own */
    if (memchr(d, '%', size) != NULL || memchr(d, '?', size) != NULL)
        return 0;
    static const char *const hosts[] = {"a.test", "b.test"};
    for (size_t h = 0; h < 2; h++) {
        if (!fuzz_allowed(hosts[h], d, size))
            continue;
        for (unsigned how = 1; how <= PX_PATH_ALL; how++) {
            size_t n = px_path_reading(d, size, how, out);
            if (!fuzz_allowed(hosts[h], out, n))
                __builtin_trap();
        }
    }
    return 0;
}
