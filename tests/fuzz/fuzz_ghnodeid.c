/* Fuzzer for GitHub node IDs and the GraphQL repository scope built on them. The first byte
 * picks the target: 'N' + a node ID (decoded; what decodes re-encodes to the same repository),
 * 'E' + 8-byte ids (encoded then decoded: the same ids), anything else: the rest is a GraphQL
 * request body checked against a small installation. Never a crash, a leak, an out-of-bounds
 * read or an incoherent verdict. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "addons/addon_ghnodeid.h"
#include "addons/addon_ghrepos.h"
#include "addons/addon_ghscope.h"
#include "base/px_err.h"

static void fuzz_node(const uint8_t *data, size_t size)
{
    addon_ghnode_t n;
    if (addon_ghnodeid_decode((const char *)data, size, &n) != 0)
        return;
    if (n.kind != ADDON_GHNODE_REPO && n.kind != ADDON_GHNODE_IN_REPO &&
        n.kind != ADDON_GHNODE_OTHER)
        abort();
    if (n.kind == ADDON_GHNODE_REPO && !n.legacy) {
        char id[64];
        uint64_t ids[2] = {0, n.repo_id};
        addon_ghnode_t m;
        if (addon_ghnodeid_encode("R", ids, 2, id, sizeof(id)) != 0 ||
            addon_ghnodeid_decode(id, strlen(id), &m) != 0 || m.repo_id != n.repo_id)
            abort();
    }
}

static void fuzz_encode(const uint8_t *data, size_t size)
{
    uint64_t ids[3] = {0, 0, 0};
    for (size_t i = 0; i < size && i < 24; i++)
        ids[1 + i / 8 % 2] = ids[1 + i / 8 % 2] << 8 | data[i];
    char id[96];
    addon_ghnode_t n;
    if (addon_ghnodeid_encode("PR", ids, 3, id, sizeof(id)) != 0 ||
        addon_ghnodeid_decode(id, strlen(id), &n) != 0 || n.kind != ADDON_GHNODE_IN_REPO ||
        n.repo_id != ids[1])
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] == 'N') {
        fuzz_node(data + 1, size - 1);
        return 0;
    }
    if (data[0] == 'E') {
        fuzz_encode(data + 1, size - 1);
        return 0;
    }
    addon_ghrepos_t *s = addon_ghrepos_new();
    if (s == NULL || addon_ghrepos_add(s, 12345, "R_kgDNMDk", "octo/hello") != 0) {
        addon_ghrepos_free(s);
        return 0;
    }
    char detail[ADDON_GHSCOPE_DETAIL_MAX + 1];
    size_t n = 0;
    int v = addon_ghscope_check((const char *)data + 1, size - 1, s, detail, sizeof(detail), &n);
    if (v != ADDON_GHSCOPE_PASS && v != ADDON_GHSCOPE_OUTSIDE && v != ADDON_GHSCOPE_UNREADABLE &&
        v != PX_ENOMEM)
        abort();
    if (strlen(detail) > ADDON_GHSCOPE_DETAIL_MAX ||
        (v == ADDON_GHSCOPE_PASS && detail[0] != '\0') ||
        (v == ADDON_GHSCOPE_OUTSIDE && detail[0] == '\0'))
        abort();
    for (const char *p = detail; *p != '\0'; p++) {
        if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
            abort();
    }
    addon_ghrepos_free(s);
    return 0;
}
