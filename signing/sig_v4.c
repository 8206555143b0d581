#include "signing/sig_v4.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "base/px_err.h"

#define SIG__SECRET_MAX 1024 /* longest secret access key accepted */
#define SIG__QP_STACK 32     /* query parameters sorted without a heap array */

/* One query parameter: name and value already re-encoded, pointing into a scratch buffer. */
typedef struct sig__qp {
    const char *k;
    size_t klen;
    const char *v;
    size_t vlen;
    size_t koff; /* offsets, valid while the scratch buffer may still move */
    size_t voff;
} sig__qp_t;

void sig_target_split(sig_str_t target, sig_str_t *path, sig_str_t *query)
{
    const char *q = target.len > 0 ? memchr(target.base, '?', target.len) : NULL;

    if (q == NULL) {
        *path = target;
        query->base = target.len > 0 ? target.base + target.len : target.base;
        query->len = 0;
        return;
    }
    path->base = target.base;
    path->len = (size_t)(q - target.base);
    query->base = q + 1;
    query->len = target.len - path->len - 1;
}

int sig_normalize_path(sig_buf_t *out, const char *path, size_t len)
{
    size_t start = out->len;
    size_t nseg = 0;
    size_t i = 0;
    int lead = len > 0 && path[0] == '/';
    int trail = len > 0 && path[len - 1] == '/';

    if (len == 0) {
        return sig_buf_addc(out, '/');
    }
    /* Every kept segment is written as "/seg"; '..' truncates back to the last '/'. */
    while (i <= len) {
        const char *slash = i < len ? memchr(path + i, '/', len - i) : NULL;
        size_t end = slash != NULL ? (size_t)(slash - path) : len;
        size_t slen = end - i;

        if (slen == 0 || (slen == 1 && path[i] == '.')) {
            /* dropped */
        } else if (slen == 2 && path[i] == '.' && path[i + 1] == '.') {
            if (nseg > 0 && out->err == 0) {
                size_t p = out->len;

                while (p > start && out->base[p - 1] != '/') {
                    p--;
                }
                out->len = p - 1;
                nseg--;
            }
        } else {
            sig_buf_addc(out, '/');
            sig_buf_add(out, path + i, slen);
            nseg++;
        }
        i = end + 1;
    }
    if (out->err != 0) {
        return out->err;
    }
    if (nseg == 0) {
        return lead ? sig_buf_addc(out, '/') : 0;
    }
    if (!lead) {
        memmove(out->base + start, out->base + start + 1, out->len - start - 1);
        out->len--;
    }
    if (trail) {
        sig_buf_addc(out, '/');
    }
    return out->err;
}

/* Decodes every %XY of src and appends the result URI-encoded (S3 paths, query parts). */
static int sig__recode(sig_buf_t *out, const char *src, size_t len, int keep_slash)
{
    char stack[512];
    sig_buf_t tmp;
    int rc;

    sig_buf_init(&tmp, stack, sizeof(stack), SIG_CANON_MAX);
    rc = sig_uri_decode(&tmp, src, len);
    if (rc == 0) {
        rc = sig_uri_encode(out, tmp.base, tmp.len, keep_slash);
    }
    sig_buf_free(&tmp);
    return rc;
}

int sig_canonical_uri(sig_buf_t *out, const char *path, size_t len, sig_uri_mode_t mode)
{
    char stack[512];
    sig_buf_t tmp;
    int rc;

    if (len == 0) {
        return sig_buf_addc(out, '/');
    }
    switch (mode) {
    case SIG_URI_S3:
        return sig__recode(out, path, len, 1);
    case SIG_URI_DOUBLE:
        return sig_uri_encode(out, path, len, 1);
    case SIG_URI_NORMALIZE:
        sig_buf_init(&tmp, stack, sizeof(stack), SIG_CANON_MAX);
        rc = sig_normalize_path(&tmp, path, len);
        if (rc == 0) {
            rc = sig_uri_encode(out, tmp.base, tmp.len, 1);
        }
        sig_buf_free(&tmp);
        return rc;
    }
    return PX_EPARSE;
}

static int sig__qp_cmp(const void *a, const void *b)
{
    const sig__qp_t *x = a;
    const sig__qp_t *y = b;
    size_t n = x->klen < y->klen ? x->klen : y->klen;
    int c = n > 0 ? memcmp(x->k, y->k, n) : 0;

    if (c != 0) {
        return c;
    }
    if (x->klen != y->klen) {
        return x->klen < y->klen ? -1 : 1;
    }
    n = x->vlen < y->vlen ? x->vlen : y->vlen;
    c = n > 0 ? memcmp(x->v, y->v, n) : 0;
    if (c != 0) {
        return c;
    }
    if (x->vlen != y->vlen) {
        return x->vlen < y->vlen ? -1 : 1;
    }
    return 0;
}

static int sig__is_skipped(const char *k, size_t klen, unsigned flags)
{
    if ((flags & SIG_QUERY_SKIP_SIGNATURE) && klen == 15 && memcmp(k, "X-Amz-Signature", 15) == 0) {
        return 1;
    }
    if ((flags & SIG_QUERY_SKIP_TOKEN) && klen == 20 &&
        memcmp(k, "X-Amz-Security-Token", 20) == 0) {
        return 1;
    }
    return 0;
}

int sig_canonical_query(sig_buf_t *out, const char *query, size_t len, unsigned flags)
{
    sig__qp_t stack_qp[SIG__QP_STACK];
    sig__qp_t *qp = stack_qp;
    char stack[2048];
    sig_buf_t scratch;
    size_t count = 1;
    size_t n = 0;
    size_t i = 0;
    int rc = 0;

    if (len == 0) {
        return 0;
    }
    for (i = 0; i < len; i++) {
        count += query[i] == '&';
    }
    if (count > SIG_QUERY_PARAMS_MAX) {
        return PX_ETOOBIG;
    }
    if (count > SIG__QP_STACK) {
        qp = malloc(count * sizeof(*qp));
        if (qp == NULL) {
            return PX_ENOMEM;
        }
    }
    sig_buf_init(&scratch, stack, sizeof(stack), SIG_CANON_MAX);
    i = 0;
    while (i <= len && rc == 0) {
        const char *amp = i < len ? memchr(query + i, '&', len - i) : NULL;
        size_t end = amp != NULL ? (size_t)(amp - query) : len;
        const char *eq = end > i ? memchr(query + i, '=', end - i) : NULL;
        size_t kend = eq != NULL ? (size_t)(eq - query) : end;
        sig__qp_t *p = &qp[n];

        if (end > i) {
            p->koff = scratch.len;
            rc = sig__recode(&scratch, query + i, kend - i, 0);
            p->klen = scratch.len - p->koff;
            if (rc == 0 && sig__is_skipped(scratch.base + p->koff, p->klen, flags)) {
                scratch.len = p->koff;
            } else if (rc == 0) {
                p->voff = scratch.len;
                if (eq != NULL) {
                    rc = sig__recode(&scratch, eq + 1, end - kend - 1, 0);
                }
                p->vlen = scratch.len - p->voff;
                n++;
            }
        }
        i = end + 1;
    }
    if (rc == 0) {
        for (i = 0; i < n; i++) {
            qp[i].k = scratch.base + qp[i].koff;
            qp[i].v = scratch.base + qp[i].voff;
        }
        qsort(qp, n, sizeof(*qp), sig__qp_cmp);
        for (i = 0; i < n; i++) {
            if (i > 0) {
                sig_buf_addc(out, '&');
            }
            sig_buf_add(out, qp[i].k, qp[i].klen);
            sig_buf_addc(out, '=');
            sig_buf_add(out, qp[i].v, qp[i].vlen);
        }
        rc = out->err;
    }
    sig_buf_free(&scratch);
    if (qp != stack_qp) {
        free(qp);
    }
    return rc;
}

int sig_canonical_header_value(sig_buf_t *out, const char *value, size_t len)
{
    size_t b = 0;
    size_t e = len;
    size_t i;

    while (b < e && sig_is_space((unsigned char)value[b])) {
        b++;
    }
    while (e > b && sig_is_space((unsigned char)value[e - 1])) {
        e--;
    }
    i = b;
    while (i < e) {
        size_t run = i;

        while (run < e && !sig_is_space((unsigned char)value[run])) {
            run++;
        }
        sig_buf_add(out, value + i, run - i);
        if (run == e) {
            break;
        }
        sig_buf_addc(out, ' ');
        while (run < e && sig_is_space((unsigned char)value[run])) {
            run++;
        }
        i = run;
    }
    return out->err;
}

/* tchar of RFC 9110 minus upper-case letters. */
static int sig__is_name_char(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
        return 1;
    }
    return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static int sig__str_cmp(sig_str_t a, sig_str_t b)
{
    size_t n = a.len < b.len ? a.len : b.len;
    int c = n > 0 ? memcmp(a.base, b.base, n) : 0;

    if (c != 0) {
        return c;
    }
    return a.len < b.len ? -1 : (a.len > b.len ? 1 : 0);
}

int sig_names_add(sig_names_t *names, sig_str_t name)
{
    size_t i = names->n;

    while (i > 0 && sig__str_cmp(names->name[i - 1], name) >= 0) {
        if (sig__str_cmp(names->name[i - 1], name) == 0) {
            return 0;
        }
        i--;
    }
    if (names->n >= SIG_SIGNED_HEADERS_MAX) {
        return PX_ETOOBIG;
    }
    memmove(&names->name[i + 1], &names->name[i], (names->n - i) * sizeof(names->name[0]));
    names->name[i] = name;
    names->n++;
    return 0;
}

int sig_names_find(const sig_names_t *names, const char *name)
{
    size_t len = strlen(name);
    size_t i;

    for (i = 0; i < names->n; i++) {
        if (names->name[i].len == len && memcmp(names->name[i].base, name, len) == 0) {
            return (int)i;
        }
    }
    return -1;
}

void sig_names_remove(sig_names_t *names, const char *name)
{
    int i = sig_names_find(names, name);

    if (i >= 0) {
        memmove(&names->name[i], &names->name[i + 1],
                (names->n - (size_t)i - 1) * sizeof(names->name[0]));
        names->n--;
    }
}

int sig_names_parse(const char *list, size_t len, sig_names_t *out)
{
    size_t i = 0;

    out->n = 0;
    if (len == 0) {
        return PX_EPARSE;
    }
    while (i <= len) {
        const char *semi = i < len ? memchr(list + i, ';', len - i) : NULL;
        size_t end = semi != NULL ? (size_t)(semi - list) : len;
        sig_str_t name = {list + i, end - i};
        size_t before = out->n;
        size_t j;
        int rc;

        if (name.len == 0 || name.len > SIG_HEADER_NAME_MAX) {
            return PX_EPARSE;
        }
        for (j = 0; j < name.len; j++) {
            if (!sig__is_name_char((unsigned char)name.base[j])) {
                return PX_EPARSE;
            }
        }
        rc = sig_names_add(out, name);
        if (rc != 0) {
            return rc;
        }
        if (out->n == before) {
            return PX_EPARSE; /* duplicate */
        }
        i = end + 1;
    }
    return 0;
}

int sig_names_join(const sig_names_t *names, sig_buf_t *out)
{
    size_t i;

    for (i = 0; i < names->n; i++) {
        if (i > 0) {
            sig_buf_addc(out, ';');
        }
        sig_buf_add(out, names->name[i].base, names->name[i].len);
    }
    return out->err;
}

static int sig__name_eq(sig_str_t hname, sig_str_t lower)
{
    size_t i;

    if (hname.len != lower.len) {
        return 0;
    }
    for (i = 0; i < lower.len; i++) {
        unsigned char c = (unsigned char)hname.base[i];

        if (c >= 'A' && c <= 'Z') {
            c = (unsigned char)(c + ('a' - 'A'));
        }
        if (c != (unsigned char)lower.base[i]) {
            return 0;
        }
    }
    return 1;
}

int sig_canonical_headers(sig_buf_t *out, const sig_header_t *headers, size_t n,
                          const sig_names_t *names, sig_str_t token)
{
    size_t i;
    size_t j;

    for (i = 0; i < names->n; i++) {
        sig_str_t name = names->name[i];
        int first = 1;

        sig_buf_add(out, name.base, name.len);
        sig_buf_addc(out, ':');
        if (token.base != NULL && name.len == 20 &&
            memcmp(name.base, "x-amz-security-token", 20) == 0) {
            sig_canonical_header_value(out, token.base, token.len);
        } else {
            for (j = 0; j < n; j++) {
                if (!sig__name_eq(headers[j].name, name)) {
                    continue;
                }
                if (!first) {
                    sig_buf_addc(out, ',');
                }
                sig_canonical_header_value(out, headers[j].value.base, headers[j].value.len);
                first = 0;
            }
        }
        sig_buf_addc(out, '\n');
    }
    return out->err;
}

int sig_canonical_request(sig_buf_t *out, const sig_canon_t *c)
{
    int rc;

    sig_buf_add(out, c->method.base, c->method.len);
    sig_buf_addc(out, '\n');
    rc = sig_canonical_uri(out, c->path.base, c->path.len, c->uri_mode);
    if (rc != 0) {
        return rc;
    }
    sig_buf_addc(out, '\n');
    rc = sig_canonical_query(out, c->query.base, c->query.len, c->query_flags);
    if (rc != 0) {
        return rc;
    }
    sig_buf_addc(out, '\n');
    sig_canonical_headers(out, c->headers, c->nheaders, c->names, c->token);
    sig_buf_addc(out, '\n');
    sig_names_join(c->names, out);
    sig_buf_addc(out, '\n');
    sig_buf_add(out, c->payload_hash.base, c->payload_hash.len);
    return out->err;
}

int sig_string_to_sign(sig_buf_t *out, const char *label, sig_str_t amz_date, sig_str_t scope,
                       const char hash_hex[SIG_SHA256_HEX_LEN])
{
    sig_buf_adds(out, label);
    sig_buf_addc(out, '\n');
    sig_buf_add(out, amz_date.base, amz_date.len);
    sig_buf_addc(out, '\n');
    sig_buf_add(out, scope.base, scope.len);
    sig_buf_addc(out, '\n');
    return sig_buf_add(out, hash_hex, SIG_SHA256_HEX_LEN);
}

int sig_v4_signing_key(sig_str_t secret, sig_str_t date, sig_str_t region, sig_str_t service,
                       unsigned char key[SIG_SHA256_LEN])
{
    unsigned char k0[4 + SIG__SECRET_MAX];
    sig_str_t steps[4];
    int rc;

    if (secret.len > SIG__SECRET_MAX) {
        return PX_ETOOBIG;
    }
    memcpy(k0, "AWS4", 4);
    if (secret.len > 0) {
        memcpy(k0 + 4, secret.base, secret.len);
    }
    steps[0] = date;
    steps[1] = region;
    steps[2] = service;
    steps[3] = SIG_STR("aws4_request");
    rc = sig_hmac_chain(steps, 4, k0, 4 + secret.len, key);
    OPENSSL_cleanse(k0, sizeof(k0));
    return rc;
}

int sig_v4_signature(const unsigned char key[SIG_SHA256_LEN], const char *sts, size_t len,
                     char hex[SIG_V4_SIG_LEN])
{
    unsigned char mac[SIG_SHA256_LEN];
    int rc = sig_hmac_sha256(key, SIG_SHA256_LEN, sts, len, mac);

    if (rc == 0) {
        sig_hex_encode(mac, sizeof(mac), hex);
    }
    return rc;
}
