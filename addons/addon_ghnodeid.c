/* GitHub node IDs (addon_ghnodeid.h): base64url / base64 and the MessagePack subset they use. */
#include "addons/addon_ghnodeid.h"

#include <stdio.h>
#include <string.h>

#include "base/px_b64.h"
#include "base/px_err.h"

#define GHNODE_BYTES_MAX (ADDON_GHNODEID_MAX * 3 / 4 + 3)
#define GHNODE_PREFIX_MAX 8
#define GHNODE_ARRAY_MAX 15 /* a fixarray holds at most 15 elements */

/* Prefixes of objects a repository owns whose ID is [0, repo id, object id]. A prefix outside
 * this list is not tied to a repository (fail-secure: an ID whose second element may be an
 * owner's or an organisation's id is never read as a repository's). */
static const char *const ghnode_in_repo[] = {
    "I",    /* Issue */
    "PR",   /* PullRequest */
    "IC",   /* IssueComment */
    "PRR",  /* PullRequestReview */
    "PRRC", /* PullRequestReviewComment */
    "PRRT", /* PullRequestReviewThread */
    "LA",   /* Label */
    "MI",   /* Milestone */
    "D",    /* Discussion */
    "DC",   /* DiscussionComment */
    "DIC",  /* DiscussionCategory */
    "RE",   /* Release */
};

/* Decodes s[0..len) (no padding; the unused trailing bits must be zero). The byte count, or -1. */
static long ghnode_unb64(const char *s, size_t len, int url, unsigned char *out, size_t cap)
{
    if (len % 4 == 1 || len / 4 * 3 + 2 > cap)
        return -1;
    size_t o = 0;
    unsigned long acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        int v = px_b64_value((unsigned char)s[i], url);
        if (v < 0)
            return -1;
        acc = (acc << 6) | (unsigned long)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits);
            acc &= (1UL << bits) - 1;
        }
    }
    return acc != 0 ? -1 : (long)o;
}

/* A MessagePack array of unsigned integers at b[0..n): 0 and ids/count, or -1. */
static int ghnode_msgpack(const unsigned char *b, size_t n, uint64_t *ids, size_t *count)
{
    if (n < 1 || (b[0] & 0xF0) != 0x90)
        return -1;
    size_t items = b[0] & 0x0F, i = 1;
    for (size_t k = 0; k < items; k++) {
        if (i >= n)
            return -1;
        unsigned char t = b[i++];
        size_t w = t == 0xCC ? 1 : t == 0xCD ? 2 : t == 0xCE ? 4 : t == 0xCF ? 8 : 0;
        if (t < 0x80) {
            ids[k] = t;
            continue;
        }
        if (w == 0 || n - i < w)
            return -1;
        uint64_t v = 0;
        for (size_t j = 0; j < w; j++)
            v = (v << 8) | b[i++];
        ids[k] = v;
    }
    if (i != n || items == 0)
        return -1;
    *count = items;
    return 0;
}

static int ghnode_in_repo_prefix(const char *p, size_t len)
{
    for (size_t i = 0; i < sizeof(ghnode_in_repo) / sizeof(ghnode_in_repo[0]); i++) {
        if (strlen(ghnode_in_repo[i]) == len && memcmp(ghnode_in_repo[i], p, len) == 0)
            return 1;
    }
    return 0;
}

static int ghnode_current(const char *s, size_t len, size_t us, addon_ghnode_t *out)
{
    for (size_t i = 0; i < us; i++) {
        if (!(s[i] >= 'A' && s[i] <= 'Z'))
            return PX_EPARSE;
    }
    unsigned char b[GHNODE_BYTES_MAX];
    long n = ghnode_unb64(s + us + 1, len - us - 1, 1, b, sizeof(b));
    uint64_t ids[GHNODE_ARRAY_MAX];
    size_t count = 0;
    if (n <= 0 || ghnode_msgpack(b, (size_t)n, ids, &count) != 0)
        return PX_EPARSE;
    out->kind = ADDON_GHNODE_OTHER;
    if (us == 1 && s[0] == 'R' && count == 2 && ids[0] == 0) {
        out->kind = ADDON_GHNODE_REPO;
        out->repo_id = ids[1];
    } else if (count == 3 && ids[0] == 0 && ghnode_in_repo_prefix(s, us)) {
        out->kind = ADDON_GHNODE_IN_REPO;
        out->repo_id = ids[1];
    }
    return 0;
}

/* "0<n>:<Type><digits>" with n = strlen(Type). */
static int ghnode_legacy(const char *s, size_t len, addon_ghnode_t *out)
{
    size_t pad = 0;
    while (pad < 2 && len > pad && s[len - 1 - pad] == '=')
        pad++;
    if (pad > 0 && len % 4 != 0)
        return PX_EPARSE;
    unsigned char b[GHNODE_BYTES_MAX];
    long n = ghnode_unb64(s, len - pad, 0, b, sizeof(b));
    if (n < 4 || b[0] != '0')
        return PX_EPARSE;
    size_t i = 1, tl = 0;
    while (i < (size_t)n && b[i] >= '0' && b[i] <= '9' && tl <= ADDON_GHNODEID_TYPE_MAX)
        tl = tl * 10 + (size_t)(b[i++] - '0');
    if (i == 1 || i >= (size_t)n || b[i] != ':' || tl == 0 || tl > ADDON_GHNODEID_TYPE_MAX ||
        (size_t)n - i - 1 <= tl)
        return PX_EPARSE;
    const unsigned char *type = b + i + 1;
    for (size_t k = 0; k < tl; k++) {
        if (!((type[k] >= 'A' && type[k] <= 'Z') || (type[k] >= 'a' && type[k] <= 'z')))
            return PX_EPARSE;
    }
    uint64_t id = 0;
    size_t digits = 0;
    for (const unsigned char *d = type + tl; d < b + n; d++, digits++) {
        if (*d < '0' || *d > '9' || id > (UINT64_MAX - 9) / 10 || digits >= 19)
            return PX_EPARSE;
        id = id * 10 + (uint64_t)(*d - '0');
    }
    out->legacy = 1;
    out->kind = ADDON_GHNODE_OTHER;
    if (tl == 10 && memcmp(type, "Repository", 10) == 0) {
        out->kind = ADDON_GHNODE_REPO;
        out->repo_id = id;
    }
    return 0;
}

int addon_ghnodeid_decode(const char *s, size_t len, addon_ghnode_t *out)
{
    memset(out, 0, sizeof(*out));
    if (len == 0 || len > ADDON_GHNODEID_MAX)
        return PX_EPARSE;
    const char *us = memchr(s, '_', len);
    if (us != NULL) {
        size_t pl = (size_t)(us - s);
        if (pl == 0 || pl > GHNODE_PREFIX_MAX)
            return PX_EPARSE;
        return ghnode_current(s, len, pl, out);
    }
    return ghnode_legacy(s, len, out);
}

int addon_ghnodeid_encode(const char *prefix, const uint64_t *ids, size_t n, char *out,
                          size_t outlen)
{
    unsigned char b[1 + GHNODE_ARRAY_MAX * 9];
    size_t bl = 0;
    if (n == 0 || n > GHNODE_ARRAY_MAX)
        return PX_ETOOBIG;
    b[bl++] = (unsigned char)(0x90 | n);
    for (size_t k = 0; k < n; k++) {
        uint64_t v = ids[k];
        size_t w = v < 0x80 ? 0 : v <= 0xFF ? 1 : v <= 0xFFFF ? 2 : v <= 0xFFFFFFFFu ? 4 : 8;
        if (w == 0) {
            b[bl++] = (unsigned char)v;
            continue;
        }
        b[bl++] = w == 1 ? 0xCC : w == 2 ? 0xCD : w == 4 ? 0xCE : 0xCF;
        for (size_t j = w; j-- > 0;)
            b[bl++] = (unsigned char)(v >> (8 * j));
    }
    int o = snprintf(out, outlen, "%s_", prefix);
    if (o < 0 || (size_t)o + (bl * 4 + 2) / 3 + 1 > outlen)
        return PX_ETOOBIG;
    long e = px_b64_encode_as(b, bl, PX_B64_URL | PX_B64_NOPAD, out + o, outlen - (size_t)o - 1);
    out[o + e] = '\0'; /* the room was checked above */
    return 0;
}
