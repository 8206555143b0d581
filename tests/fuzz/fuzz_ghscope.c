/* Fuzzer for the GitHub App repository scope and the GraphQL request envelope: any body is
 * answered (a verdict or PX_ENOMEM) without crashing, leaking or reading out of bounds, within
 * the libFuzzer timeout (the walks are linear, nesting is capped); the detail is printable and
 * capped; a body the envelope refuses (a key twice, another spelling of a parameter, too deep)
 * never passes; and the URL parameter scan agrees with the name check. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "addons/addon_ghrepos.h"
#include "addons/addon_ghscope.h"
#include "addons/addon_gqlreq.h"
#include "base/px_err.h"

static addon_ghrepos_t *fuzz_repos(void)
{
    static addon_ghrepos_t *s;
    if (s == NULL) {
        s = addon_ghrepos_new();
        if (s == NULL || addon_ghrepos_add(s, 12345, "R_kgDNMDk", "octo/hello") != 0 ||
            addon_ghrepos_add(s, 300, "MDEwOlJlcG9zaXRvcnkzMDA=", "Octo/World") != 0 ||
            addon_ghrepos_seal(s) != 0)
            abort();
    }
    return s;
}

static void fuzz_url(const uint8_t *data, size_t size)
{
    char t[512] = "/graphql?";
    size_t n = size < sizeof(t) - 9 ? size : sizeof(t) - 9;
    memcpy(t + 9, data, n);
    addon_str_t name = {NULL, 0};
    int hit = addon_gqlreq_url_params((addon_str_t){t, 9 + n}, &name);
    if (hit && (name.base < t + 9 || name.base + name.len > t + 9 + n ||
                !addon_gqlreq_param_name(name.base, name.len)))
        abort();
    if (!hit && n > 0 && memchr(t + 9, '&', n) == NULL && memchr(t + 9, ';', n) == NULL) {
        const char *eq = memchr(t + 9, '=', n);
        if (addon_gqlreq_param_name(t + 9, eq != NULL ? (size_t)(eq - (t + 9)) : n))
            abort(); /* one parameter, named like one: the scan must have seen it */
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_url(data, size);
    char detail[ADDON_GHSCOPE_DETAIL_MAX + 1];
    size_t nt = 0;
    int v =
        addon_ghscope_check((const char *)data, size, fuzz_repos(), detail, sizeof(detail), &nt);
    if (v != ADDON_GHSCOPE_PASS && v != ADDON_GHSCOPE_OUTSIDE && v != ADDON_GHSCOPE_UNREADABLE &&
        v != PX_ENOMEM)
        abort();
    size_t dl = strnlen(detail, sizeof(detail));
    if (dl > ADDON_GHSCOPE_DETAIL_MAX || (v == ADDON_GHSCOPE_PASS && dl != 0) ||
        (v != ADDON_GHSCOPE_PASS && v > 0 && dl == 0))
        abort();
    for (size_t i = 0; i < dl; i++) {
        if (detail[i] < 0x20 || detail[i] > 0x7e || detail[i] == '"' || detail[i] == '\\')
            abort();
    }
    json_t *j = NULL;
    const char *why = NULL;
    int lr = addon_gqlreq_load((const char *)data, size, 0, &j, &why);
    if (lr == 0 && j == NULL)
        abort();
    if (lr != 0 && (j != NULL || why == NULL || (lr == PX_EPARSE && v == ADDON_GHSCOPE_PASS)))
        abort(); /* what the envelope refuses never passes the scope */
    json_decref(j);
    return 0;
}
