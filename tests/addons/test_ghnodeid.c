/* addon_ghnodeid: GitHub node IDs of both formats decoded to their repository, table-driven;
 * the strictness of the decoder (alphabet, trailing bits, MessagePack subset, every byte
 * used); the encoder against the decoder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "addons/addon_ghnodeid.h"
#include "base/px_err.h"

typedef struct nid_case {
    const char *id;
    int rc;
    addon_ghnode_kind_t kind;
    uint64_t repo;
    int legacy;
} nid_case_t;

static const nid_case_t nid_cases[] = {
    /* current format */
    {"R_kgDNMDk", 0, ADDON_GHNODE_REPO, 12345, 0},              /* [0, 12345] */
    {"R_kgDPAAABAAAAAAA", 0, ADDON_GHNODE_REPO, 1ULL << 40, 0}, /* uint64 */
    {"I_kwDNMDkH", 0, ADDON_GHNODE_IN_REPO, 12345, 0},          /* [0, 12345, 7] */
    {"LA_kwDNASwF", 0, ADDON_GHNODE_IN_REPO, 300, 0},           /* a label: [0, 300, 5] */
    {"U_kgDOA3N-eg", 0, ADDON_GHNODE_OTHER, 0, 0},              /* a user: [0, 57900666] */
    {"PVT_kwDNMDkH", 0, ADDON_GHNODE_OTHER, 0, 0}, /* [0, a, b] but not a repository prefix */
    {"R_kwDNMDkH", 0, ADDON_GHNODE_OTHER, 0, 0},   /* R_ with three elements */
    {"I_kgDNMDk", 0, ADDON_GHNODE_OTHER, 0, 0},    /* I_ with two elements */
    {"R_kgHNMDk", 0, ADDON_GHNODE_OTHER, 0, 0},    /* [1, 12345] */
    /* legacy */
    {"MDEwOlJlcG9zaXRvcnkxMjM0NQ==", 0, ADDON_GHNODE_REPO, 12345, 1},
    {"MDEwOlJlcG9zaXRvcnkxMjM0NQ", 0, ADDON_GHNODE_REPO, 12345, 1}, /* unpadded */
    {"MDQ6VXNlcjQwMjcwMzc=", 0, ADDON_GHNODE_OTHER, 0, 1},          /* 04:User4027037 */
    /* undecodable */
    {"", PX_EPARSE, 0, 0, 0},
    {"R_", PX_EPARSE, 0, 0, 0},
    {"_kgDNMDk", PX_EPARSE, 0, 0, 0},
    {"r_kgDNMDk", PX_EPARSE, 0, 0, 0},          /* a lowercase prefix */
    {"REPOSITORY_kgDNMDk", PX_EPARSE, 0, 0, 0}, /* a prefix longer than 8 */
    {"R_kgDNMD", PX_EPARSE, 0, 0, 0},           /* truncated uint16 */
    {"R_kgDNMDl", PX_EPARSE, 0, 0, 0},          /* non-zero trailing bits */
    {"R_kgDNMDk=", PX_EPARSE, 0, 0, 0},         /* padding in base64url */
    {"R_kgDNMDkA", PX_EPARSE, 0, 0, 0},         /* a byte after the array */
    {"R_kgCjYWJj", PX_EPARSE, 0, 0, 0},         /* a str element */
    {"R_gQ", PX_EPARSE, 0, 0, 0},               /* 0x81: a map */
    {"R_kA", PX_EPARSE, 0, 0, 0},               /* an empty array */
    {"R_kg+NMDk", PX_EPARSE, 0, 0, 0},          /* '+' is not base64url */
    {"R_k", PX_EPARSE, 0, 0, 0},                /* one character in a quantum */
    {"not an id", PX_EPARSE, 0, 0, 0},
    {"MDEwOlJlcG9zaXRvcnk=", PX_EPARSE, 0, 0, 0},     /* 010:Repository, no id */
    {"MDk6UmVwb3NpdG9yeTE=", PX_EPARSE, 0, 0, 0},     /* 09:Repository1: wrong length */
    {"MDEwOlJlcG9zaXRvcnkxMmE=", PX_EPARSE, 0, 0, 0}, /* 010:Repository12a */
    {"MTA6UmVwb3NpdG9yeTE=", PX_EPARSE, 0, 0, 0},     /* 10:Repository1: no leading 0 */
};

static void test_ghnodeid_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(nid_cases) / sizeof(nid_cases[0]); i++) {
        const nid_case_t *c = &nid_cases[i];
        addon_ghnode_t n;
        int rc = addon_ghnodeid_decode(c->id, strlen(c->id), &n);
        if (rc != c->rc)
            fail_msg("%s: rc %d, expected %d", c->id, rc, c->rc);
        if (rc != 0)
            continue;
        if (n.kind != c->kind || n.legacy != c->legacy)
            fail_msg("%s: kind %d legacy %d", c->id, (int)n.kind, n.legacy);
        if (c->kind != ADDON_GHNODE_OTHER && n.repo_id != c->repo)
            fail_msg("%s: repo %llu", c->id, (unsigned long long)n.repo_id);
    }
}

static void test_ghnodeid_roundtrip(void **state)
{
    (void)state;
    static const uint64_t values[] = {0,          1,         0x7f,    0x80,      0xff,
                                      0x100,      0xffff,    0x10000, 123456789, 0xffffffffULL,
                                      1ULL << 32, UINT64_MAX};
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        char id[64];
        uint64_t r[2] = {0, values[i]};
        assert_int_equal(addon_ghnodeid_encode("R", r, 2, id, sizeof(id)), 0);
        addon_ghnode_t n;
        assert_int_equal(addon_ghnodeid_decode(id, strlen(id), &n), 0);
        assert_int_equal(n.kind, ADDON_GHNODE_REPO);
        assert_true(n.repo_id == values[i]);
        uint64_t o[3] = {0, values[i], 42};
        assert_int_equal(addon_ghnodeid_encode("PR", o, 3, id, sizeof(id)), 0);
        assert_int_equal(addon_ghnodeid_decode(id, strlen(id), &n), 0);
        assert_int_equal(n.kind, ADDON_GHNODE_IN_REPO);
        assert_true(n.repo_id == values[i]);
    }
    char small[8];
    uint64_t r[2] = {0, 12345};
    assert_int_equal(addon_ghnodeid_encode("R", r, 2, small, sizeof(small)), PX_ETOOBIG);
}

static void test_ghnodeid_length_cap(void **state)
{
    (void)state;
    char id[ADDON_GHNODEID_MAX + 8];
    memset(id, 'A', sizeof(id));
    memcpy(id, "R_", 2);
    addon_ghnode_t n;
    assert_int_equal(addon_ghnodeid_decode(id, sizeof(id), &n), PX_EPARSE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ghnodeid_table),
        cmocka_unit_test(test_ghnodeid_roundtrip),
        cmocka_unit_test(test_ghnodeid_length_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
