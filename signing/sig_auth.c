#include "signing/sig_auth.h"

#include <string.h>

#include "base/px_err.h"
#include "signing/sig_encode.h"
#include "signing/sig_v4.h"

#define SIG__SCOPE_PART_MAX 64 /* region or service name */
#define SIG__EXPIRES_DIGITS 7  /* X-Amz-Expires is at most 604800 */
#define SIG__QKEY_MAX 32       /* longest query name we decode to compare */

sig_alg_t sig_alg_from_name(const char *s, size_t len)
{
    if (len == 16 && memcmp(s, "AWS4-HMAC-SHA256", 16) == 0) {
        return SIG_ALG_V4;
    }
    if (len == 22 && memcmp(s, "AWS4-ECDSA-P256-SHA256", 22) == 0) {
        return SIG_ALG_V4A;
    }
    return 0;
}

const char *sig_alg_name(sig_alg_t alg)
{
    return alg == SIG_ALG_V4A ? SIG_LABEL_V4A : SIG_LABEL_V4;
}

int sig_service_is_s3(sig_str_t service)
{
    static const char *const names[] = {"s3", "s3-object-lambda", "s3-outposts", "s3express"};
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (service.len == strlen(names[i]) && memcmp(service.base, names[i], service.len) == 0) {
            return 1;
        }
    }
    return 0;
}

static int sig__all_digits(const char *s, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return 0;
        }
    }
    return 1;
}

int sig_amz_date_valid(const char *s, size_t len)
{
    return len == SIG_AMZ_DATE_LEN && sig__all_digits(s, 8) && s[8] == 'T' &&
           sig__all_digits(s + 9, 6) && s[15] == 'Z';
}

static int sig__scope_part_ok(const char *s, size_t len)
{
    size_t i;

    if (len == 0 || len > SIG__SCOPE_PART_MAX) {
        return 0;
    }
    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.')) {
            return 0;
        }
    }
    return 1;
}

static int sig__akid_ok(const char *s, size_t len)
{
    size_t i;

    if (len == 0 || len > SIG_AKID_MAX) {
        return 0;
    }
    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c <= 0x20 || c >= 0x7f || strchr("/,;=\"\\", c) != NULL) {
            return 0;
        }
    }
    return 1;
}

int sig_auth_parse_credential(sig_alg_t alg, const char *cred, size_t len, sig_auth_t *out)
{
    const char *slash = len > 0 ? memchr(cred, '/', len) : NULL;
    sig_str_t part[5];
    size_t nparts = 0;
    size_t want = alg == SIG_ALG_V4A ? 3 : 4;
    size_t i;

    if (slash == NULL || !sig__akid_ok(cred, (size_t)(slash - cred))) {
        return PX_EPARSE;
    }
    out->access_key_id.base = cred;
    out->access_key_id.len = (size_t)(slash - cred);
    out->scope.base = slash + 1;
    out->scope.len = len - out->access_key_id.len - 1;
    if (out->scope.len == 0 || out->scope.len > SIG_SCOPE_MAX) {
        return PX_EPARSE;
    }
    i = 0;
    while (i <= out->scope.len) {
        const char *s = out->scope.base;
        const char *next = i < out->scope.len ? memchr(s + i, '/', out->scope.len - i) : NULL;
        size_t end = next != NULL ? (size_t)(next - s) : out->scope.len;

        if (nparts == want) {
            return PX_EPARSE;
        }
        part[nparts].base = s + i;
        part[nparts].len = end - i;
        nparts++;
        i = end + 1;
    }
    if (nparts != want || part[0].len != 8 || !sig__all_digits(part[0].base, 8) ||
        part[want - 1].len != 12 || memcmp(part[want - 1].base, "aws4_request", 12) != 0) {
        return PX_EPARSE;
    }
    for (i = 1; i + 1 < want; i++) {
        if (!sig__scope_part_ok(part[i].base, part[i].len)) {
            return PX_EPARSE;
        }
    }
    out->date = part[0];
    if (alg == SIG_ALG_V4A) {
        out->region.base = part[1].base;
        out->region.len = 0;
        out->service = part[1];
    } else {
        out->region = part[1];
        out->service = part[2];
    }
    return 0;
}

static int sig__signature_ok(sig_alg_t alg, const char *s, size_t len)
{
    size_t i;

    if (alg == SIG_ALG_V4 ? len != SIG_V4_SIG_LEN
                          : (len < 16 || len > SIG_V4A_SIG_MAX || len % 2 != 0)) {
        return 0;
    }
    for (i = 0; i < len; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) {
            return 0;
        }
    }
    return 1;
}

static int sig__signed_headers_ok(const char *s, size_t len)
{
    sig_names_t names;

    return sig_names_parse(s, len, &names) == 0;
}

static int sig__is_ows(char c)
{
    return c == ' ' || c == '\t';
}

int sig_auth_parse_header(const char *value, size_t len, sig_auth_t *out)
{
    size_t b = 0;
    size_t e = len;
    size_t i;
    int have_cred = 0;
    int have_sh = 0;
    int have_sig = 0;

    memset(out, 0, offsetof(sig_auth_t, store));
    while (b < e && sig__is_ows(value[b])) {
        b++;
    }
    while (e > b && sig__is_ows(value[e - 1])) {
        e--;
    }
    i = b;
    while (i < e && value[i] != ' ' && value[i] != '\t') {
        i++;
    }
    out->alg = sig_alg_from_name(value + b, i - b);
    if (out->alg == 0 || i == e) {
        return PX_EPARSE;
    }
    while (i < e && sig__is_ows(value[i])) {
        i++;
    }
    while (i <= e) {
        const char *comma = i < e ? memchr(value + i, ',', e - i) : NULL;
        size_t end = comma != NULL ? (size_t)(comma - value) : e;
        size_t pb = i;
        size_t pe = end;
        const char *eq;
        const char *v;
        size_t vlen;

        while (pb < pe && sig__is_ows(value[pb])) {
            pb++;
        }
        while (pe > pb && sig__is_ows(value[pe - 1])) {
            pe--;
        }
        eq = pe > pb ? memchr(value + pb, '=', pe - pb) : NULL;
        if (eq == NULL) {
            return PX_EPARSE;
        }
        v = eq + 1;
        vlen = (size_t)(value + pe - v);
        if ((size_t)(eq - (value + pb)) == 10 && memcmp(value + pb, "Credential", 10) == 0) {
            if (have_cred || sig_auth_parse_credential(out->alg, v, vlen, out) != 0) {
                return PX_EPARSE;
            }
            have_cred = 1;
        } else if ((size_t)(eq - (value + pb)) == 13 &&
                   memcmp(value + pb, "SignedHeaders", 13) == 0) {
            if (have_sh || !sig__signed_headers_ok(v, vlen)) {
                return PX_EPARSE;
            }
            have_sh = 1;
            out->signed_headers.base = v;
            out->signed_headers.len = vlen;
        } else if ((size_t)(eq - (value + pb)) == 9 && memcmp(value + pb, "Signature", 9) == 0) {
            if (have_sig || !sig__signature_ok(out->alg, v, vlen)) {
                return PX_EPARSE;
            }
            have_sig = 1;
            out->signature.base = v;
            out->signature.len = vlen;
        } else {
            return PX_EPARSE;
        }
        i = end + 1;
    }
    return have_cred && have_sh && have_sig ? 0 : PX_EPARSE;
}

/* Appends the decoded form of a query value to out->store; *res views it. */
static int sig__store_decoded(sig_auth_t *out, const char *s, size_t len, sig_str_t *res)
{
    sig_buf_t b;
    int rc;

    sig_buf_init(&b, out->store + out->store_len, sizeof(out->store) - out->store_len,
                 sizeof(out->store) - out->store_len);
    rc = sig_uri_decode(&b, s, len);
    if (rc != 0) {
        return rc == PX_EPARSE ? PX_EPARSE : PX_ETOOBIG;
    }
    res->base = out->store + out->store_len;
    res->len = b.len;
    out->store_len += b.len;
    return 0;
}

enum {
    SIG__Q_ALG,
    SIG__Q_CRED,
    SIG__Q_DATE,
    SIG__Q_EXPIRES,
    SIG__Q_SH,
    SIG__Q_SIG,
    SIG__Q_TOKEN,
    SIG__Q_REGION_SET,
    SIG__Q_CONTENT,
    SIG__Q_COUNT
};

static int sig__query_key(const char *k, size_t len)
{
    static const char *const keys[SIG__Q_COUNT] = {
        "X-Amz-Algorithm",      "X-Amz-Credential",    "X-Amz-Date",
        "X-Amz-Expires",        "X-Amz-SignedHeaders", "X-Amz-Signature",
        "X-Amz-Security-Token", "X-Amz-Region-Set",    "X-Amz-Content-Sha256"};
    int i;

    for (i = 0; i < SIG__Q_COUNT; i++) {
        if (strlen(keys[i]) == len && memcmp(keys[i], k, len) == 0) {
            return i;
        }
    }
    return -1;
}

/* Validates the collected presigned values and fills out. */
static int sig__query_finish(sig_auth_t *out, const sig_str_t *val, const int *seen)
{
    static const int required[] = {SIG__Q_ALG,     SIG__Q_CRED, SIG__Q_DATE,
                                   SIG__Q_EXPIRES, SIG__Q_SH,   SIG__Q_SIG};
    size_t i;

    for (i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
        if (!seen[required[i]]) {
            return PX_EPARSE;
        }
    }
    out->alg = sig_alg_from_name(val[SIG__Q_ALG].base, val[SIG__Q_ALG].len);
    if (out->alg == 0 ||
        sig_auth_parse_credential(out->alg, val[SIG__Q_CRED].base, val[SIG__Q_CRED].len, out) !=
            0 ||
        !sig_amz_date_valid(val[SIG__Q_DATE].base, val[SIG__Q_DATE].len) ||
        memcmp(val[SIG__Q_DATE].base, out->date.base, 8) != 0 || val[SIG__Q_EXPIRES].len == 0 ||
        val[SIG__Q_EXPIRES].len > SIG__EXPIRES_DIGITS ||
        !sig__all_digits(val[SIG__Q_EXPIRES].base, val[SIG__Q_EXPIRES].len) ||
        !sig__signed_headers_ok(val[SIG__Q_SH].base, val[SIG__Q_SH].len) ||
        !sig__signature_ok(out->alg, val[SIG__Q_SIG].base, val[SIG__Q_SIG].len)) {
        return PX_EPARSE;
    }
    if (out->alg == SIG_ALG_V4A && (!seen[SIG__Q_REGION_SET] || val[SIG__Q_REGION_SET].len == 0)) {
        return PX_EPARSE;
    }
    out->amz_date = val[SIG__Q_DATE];
    out->expires = val[SIG__Q_EXPIRES];
    out->signed_headers = val[SIG__Q_SH];
    out->signature = val[SIG__Q_SIG];
    out->region_set = val[SIG__Q_REGION_SET];
    out->content_sha256 = val[SIG__Q_CONTENT];
    return 0;
}

int sig_auth_parse_query(const char *query, size_t len, sig_auth_t *out)
{
    sig_str_t val[SIG__Q_COUNT];
    int seen[SIG__Q_COUNT] = {0};
    size_t i = 0;

    memset(out, 0, offsetof(sig_auth_t, store));
    out->presigned = 1;
    memset(val, 0, sizeof(val));
    while (i <= len) {
        const char *amp = i < len ? memchr(query + i, '&', len - i) : NULL;
        size_t start = i;
        size_t end = amp != NULL ? (size_t)(amp - query) : len;
        const char *eq = end > start ? memchr(query + start, '=', end - start) : NULL;
        size_t kend = eq != NULL ? (size_t)(eq - query) : end;
        const char *v = eq != NULL ? eq + 1 : query + end;
        size_t vlen = (size_t)(query + end - v);
        char kbuf[SIG__QKEY_MAX];
        sig_buf_t kb;
        int key;
        int rc;

        i = end + 1;
        if (kend == start) {
            continue; /* empty piece or "=value": not one of ours */
        }
        sig_buf_init(&kb, kbuf, sizeof(kbuf), sizeof(kbuf));
        rc = sig_uri_decode(&kb, query + start, kend - start);
        if (rc == PX_EPARSE) {
            return PX_EPARSE;
        }
        if (rc != 0) {
            continue; /* longer than any auth parameter name */
        }
        key = sig__query_key(kb.base, kb.len);
        if (key < 0) {
            continue;
        }
        if (seen[key]) {
            return PX_EPARSE;
        }
        seen[key] = 1;
        if (key == SIG__Q_TOKEN) {
            out->has_token = 1;
            out->token_raw.base = v;
            out->token_raw.len = vlen;
            continue;
        }
        rc = sig__store_decoded(out, v, vlen, &val[key]);
        if (rc != 0) {
            return rc;
        }
    }
    return sig__query_finish(out, val, seen);
}
