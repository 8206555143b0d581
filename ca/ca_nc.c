/* Name constraints (RFC 5280 4.2.1.10): the list of names a CA may sign for, built from host
 * patterns for a new per-conversation CA, read back from any CA certificate that carries the
 * extension, and checked before a leaf is minted, so that airlock never signs a certificate a
 * client honouring the constraints would reject, nor one the CA was made to refuse. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "ca/ca_int.h"
#include "base/px_err.h"
#include "base/px_grow.h"

enum { NC_DNS = 1, NC_IP = 2 };

typedef struct nc_item {
    int type;     /* NC_DNS or NC_IP */
    int excluded; /* 1: an excluded subtree; 0: permitted */
    size_t len;   /* NC_DNS: bytes of dns; NC_IP: 4 or 16 */
    unsigned char ip[16];
    unsigned char mask[16];
    char dns[CA_NAME_MAX + 2]; /* may start with '.' in a foreign CA: names under it only */
} nc_item_t;

struct ca_constraints {
    nc_item_t *v;
    size_t n;
    size_t cap;
    size_t ignored; /* subtrees of other name types (email, URI, directoryName): not checked */
};

ca_constraints_t *ca_constraints_new(void)
{
    return calloc(1, sizeof(ca_constraints_t));
}

void ca_constraints_free(ca_constraints_t *c)
{
    if (c == NULL) {
        return;
    }
    free(c->v);
    free(c);
}

size_t ca_constraints_count(const ca_constraints_t *c)
{
    return c == NULL ? 0 : c->n;
}

/* ---- matching ---- */

/* 1 when name (len bytes, normalized) is base or under it. An empty base holds every name; a
 * base with a leading dot holds only the names under it (a common extension of RFC 5280). */
static int dns_within(const char *base, size_t blen, const char *name, size_t nlen)
{
    if (blen == 0) {
        return 1;
    }
    if (base[0] == '.') {
        return nlen > blen && strncasecmp(name + nlen - blen, base, blen) == 0;
    }
    if (nlen == blen) {
        return strncasecmp(name, base, blen) == 0;
    }
    return nlen > blen && name[nlen - blen - 1] == '.' &&
           strncasecmp(name + nlen - blen, base, blen) == 0;
}

static int ip_within(const nc_item_t *it, const unsigned char *ip, size_t len)
{
    if (it->len != len) {
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        if ((ip[i] & it->mask[i]) != (it->ip[i] & it->mask[i])) {
            return 0;
        }
    }
    return 1;
}

static int item_matches(const nc_item_t *it, const ca__name_t *n)
{
    if (n->is_ip) {
        return it->type == NC_IP && ip_within(it, n->ip, n->ip_len);
    }
    return it->type == NC_DNS && dns_within(it->dns, it->len, n->text, n->len);
}

/* RFC 5280: an excluded subtree always refuses; when permitted subtrees of the name's type
 * exist, one of them must hold the name; with none of its type, the type is unconstrained. */
int ca__nc_permits(const ca_constraints_t *c, const ca__name_t *n)
{
    int type = n->is_ip ? NC_IP : NC_DNS;
    int any_permitted = 0;
    int permitted = 0;

    for (size_t i = 0; i < c->n; i++) {
        const nc_item_t *it = &c->v[i];
        if (it->type != type) {
            continue;
        }
        int m = item_matches(it, n);
        if (it->excluded && m) {
            return 0;
        }
        if (!it->excluded) {
            any_permitted = 1;
            permitted |= m;
        }
    }
    return !any_permitted || permitted;
}

int ca_constraints_permits(const ca_constraints_t *c, const char *name, size_t len)
{
    ca__name_t n;

    if (ca__name_parse(name, len, &n) < 0) {
        return 0;
    }
    return c == NULL || ca__nc_permits(c, &n);
}

/* ---- building ---- */

static nc_item_t *push(ca_constraints_t *c, int *rc)
{
    *rc = px_grow(&c->v, &c->cap, c->n + 1, sizeof(*c->v), 16, CA_CONSTRAINTS_MAX);
    if (*rc != 0)
        return NULL;
    nc_item_t *it = &c->v[c->n++];
    memset(it, 0, sizeof(*it));
    return it;
}

/* Adds the permitted DNS subtree name unless one already holds it; drops those it holds. */
static int add_dns(ca_constraints_t *c, const char *name, size_t len)
{
    size_t w = 0;
    int rc = 0;

    for (size_t i = 0; i < c->n; i++) {
        const nc_item_t *it = &c->v[i];
        if (it->type == NC_DNS && !it->excluded && dns_within(it->dns, it->len, name, len)) {
            return 0;
        }
    }
    for (size_t i = 0; i < c->n; i++) {
        const nc_item_t *it = &c->v[i];
        if (it->type == NC_DNS && !it->excluded && dns_within(name, len, it->dns, it->len)) {
            continue;
        }
        c->v[w++] = c->v[i];
    }
    c->n = w;
    nc_item_t *it = push(c, &rc);
    if (it == NULL) {
        return rc;
    }
    it->type = NC_DNS;
    it->len = len;
    memcpy(it->dns, name, len);
    it->dns[len] = '\0';
    return 0;
}

static int add_ip(ca_constraints_t *c, const unsigned char *ip, size_t len)
{
    int rc = 0;

    for (size_t i = 0; i < c->n; i++) {
        const nc_item_t *it = &c->v[i];
        if (it->type == NC_IP && !it->excluded && ip_within(it, ip, len)) {
            return 0;
        }
    }
    nc_item_t *it = push(c, &rc);
    if (it == NULL) {
        return rc;
    }
    it->type = NC_IP;
    it->len = len;
    memcpy(it->ip, ip, len);
    memset(it->mask, 0xff, len);
    return 0;
}

/* The part of a glob that is fixed: the labels after the last one holding a glob character
 * ("*.s3.amazonaws.com" -> "s3.amazonaws.com", "api?.example.com" -> "example.com"); '*'
 * matches across dots, so nothing finer can be said. Empty when no whole label is fixed. */
static size_t glob_fixed_suffix(const char *s, size_t len, size_t *off)
{
    size_t last = 0;
    int seen = 0;

    for (size_t i = 0; i < len; i++) {
        if (s[i] == '*' || s[i] == '?' || s[i] == '[' || s[i] == ']' || s[i] == '\\') {
            last = i;
            seen = 1;
        }
    }
    if (!seen) {
        *off = 0;
        return len;
    }
    const char *dot = memchr(s + last, '.', len - last);
    if (dot == NULL) {
        *off = len;
        return 0;
    }
    *off = (size_t)(dot + 1 - s);
    return len - *off;
}

int ca_constraints_add_host(ca_constraints_t *c, const char *pattern, size_t len, char *err,
                            size_t errlen)
{
    const char *s = pattern;
    ca__name_t n;
    size_t off = 0;
    int rc;

    ca__err_set(err, errlen, "%s", "");
    if (len > 0 && s[0] == '.') { /* ".github.com": the host and every name under it */
        s++;
        len--;
    }
    int glob = memchr(s, '*', len) != NULL || memchr(s, '?', len) != NULL;
    size_t flen = glob ? glob_fixed_suffix(s, len, &off) : len;
    if (flen == 0) {
        ca__err_set(err, errlen,
                    "host pattern '%.*s' can match a name in any domain (or any IP address): a "
                    "name-constrained CA cannot be limited to it",
                    (int)(len > CA_NAME_MAX ? CA_NAME_MAX : len), s);
        return PX_EPARSE;
    }
    rc = ca__name_parse(s + off, flen, &n);
    if (rc < 0) {
        ca__err_set(err, errlen, "host pattern '%.*s' cannot be put in a certificate",
                    (int)(len > CA_NAME_MAX ? CA_NAME_MAX : len), s);
        return rc;
    }
    if (glob && n.is_ip) {
        /* "*.1.2.3.4": the fixed part is a DNS suffix that happens to be digits */
        n.is_ip = 0;
    }
    rc = n.is_ip ? add_ip(c, n.ip, n.ip_len) : add_dns(c, n.text, n.len);
    if (rc == PX_ETOOBIG) {
        ca__err_set(err, errlen, "more than %d names: too many for one CA certificate",
                    CA_CONSTRAINTS_MAX);
    } else if (rc < 0) {
        ca__err_set(err, errlen, "out of memory");
    }
    return rc;
}

size_t ca_constraints_describe(const ca_constraints_t *c, char *buf, size_t len)
{
    size_t used = 0;

    if (len > 0) {
        buf[0] = '\0';
    }
    for (size_t i = 0; c != NULL && i < c->n; i++) {
        const nc_item_t *it = &c->v[i];
        char text[CA_NAME_MAX + 64];
        if (it->type == NC_DNS) {
            snprintf(text, sizeof(text), "%sDNS:%s", it->excluded ? "excluded " : "",
                     it->len ? it->dns : "(any)");
        } else {
            int bits = 0;
            char addr[64] = "";
            for (size_t b = 0; b < it->len; b++) {
                for (int k = 7; k >= 0; k--) {
                    bits += (it->mask[b] >> k) & 1;
                }
            }
            if (inet_ntop(it->len == 4 ? AF_INET : AF_INET6, it->ip, addr, sizeof(addr)) == NULL) {
                snprintf(addr, sizeof(addr), "?");
            }
            snprintf(text, sizeof(text), "%sIP:%s/%d", it->excluded ? "excluded " : "", addr, bits);
        }
        int n = snprintf(used < len ? buf + used : NULL, used < len ? len - used : 0, "%s%s",
                         i ? ", " : "", text);
        used += n > 0 ? (size_t)n : 0;
    }
    return used;
}

/* ---- the certificate extension ---- */

static int subtree_push(STACK_OF(GENERAL_SUBTREE) * *sk, int type, const unsigned char *data,
                        size_t len)
{
    GENERAL_SUBTREE *st = GENERAL_SUBTREE_new();
    ASN1_STRING *val = type == GEN_DNS ? ASN1_IA5STRING_new() : ASN1_OCTET_STRING_new();

    if (*sk == NULL) {
        *sk = sk_GENERAL_SUBTREE_new_null();
    }
    if (st == NULL || val == NULL || *sk == NULL || ASN1_STRING_set(val, data, (int)len) != 1) {
        goto fail;
    }
    if (st->base == NULL && (st->base = GENERAL_NAME_new()) == NULL) {
        goto fail;
    }
    GENERAL_NAME_set0_value(st->base, type, val);
    val = NULL;
    if (sk_GENERAL_SUBTREE_push(*sk, st) <= 0) {
        goto fail;
    }
    return 1;
fail:
    ASN1_STRING_free(val);
    GENERAL_SUBTREE_free(st);
    return 0;
}

int ca__nc_add_ext(X509 *x, const ca_constraints_t *c)
{
    static const unsigned char any6[32];
    NAME_CONSTRAINTS *nc;
    int ok;
    int has_ip = 0;
    int has_dns = 0;

    for (size_t i = 0; i < c->n; i++) {
        has_dns |= c->v[i].type == NC_DNS && !c->v[i].excluded;
    }
    if (!has_dns) {
        return PX_ECONFIG; /* DNS names would be unconstrained */
    }
    nc = NAME_CONSTRAINTS_new();
    ok = nc != NULL;

    for (size_t i = 0; ok && i < c->n; i++) {
        const nc_item_t *it = &c->v[i];
        STACK_OF(GENERAL_SUBTREE) **sk =
            it->excluded ? &nc->excludedSubtrees : &nc->permittedSubtrees;
        if (it->type == NC_DNS) {
            ok = subtree_push(sk, GEN_DNS, (const unsigned char *)it->dns, it->len);
        } else {
            unsigned char b[32];
            memcpy(b, it->ip, it->len);
            memcpy(b + it->len, it->mask, it->len);
            ok = subtree_push(sk, GEN_IPADD, b, 2 * it->len);
            has_ip |= !it->excluded;
        }
    }
    /* Without a permitted address, every address is excluded: a client would otherwise take
     * an IP leaf as unconstrained, since constraints of one name type say nothing of another. */
    if (ok && !has_ip) {
        ok = subtree_push(&nc->excludedSubtrees, GEN_IPADD, any6, 8) &&
             subtree_push(&nc->excludedSubtrees, GEN_IPADD, any6, 32);
    }
    ok = ok && X509_add1_ext_i2d(x, NID_name_constraints, nc, 1, X509V3_ADD_DEFAULT) == 1;
    NAME_CONSTRAINTS_free(nc);
    return ok ? 0 : PX_ECRYPTO;
}

static int read_subtrees(ca_constraints_t *c, const STACK_OF(GENERAL_SUBTREE) * sk, int excluded)
{
    int rc = 0;

    for (int i = 0; i < sk_GENERAL_SUBTREE_num(sk); i++) {
        const GENERAL_NAME *gn = sk_GENERAL_SUBTREE_value(sk, i)->base;
        if (gn->type != GEN_DNS && gn->type != GEN_IPADD) {
            c->ignored++;
            continue;
        }
        const ASN1_STRING *s = gn->type == GEN_DNS ? gn->d.dNSName : gn->d.iPAddress;
        size_t len = (size_t)ASN1_STRING_length(s);
        const unsigned char *d = ASN1_STRING_get0_data(s);
        if (gn->type == GEN_DNS ? (len > CA_NAME_MAX + 1 || memchr(d, '\0', len) != NULL)
                                : (len != 8 && len != 32)) {
            return PX_EPARSE;
        }
        nc_item_t *it = push(c, &rc);
        if (it == NULL) {
            return rc;
        }
        it->excluded = excluded;
        if (gn->type == GEN_DNS) {
            it->type = NC_DNS;
            it->len = len;
            memcpy(it->dns, d, len);
            it->dns[len] = '\0';
        } else {
            it->type = NC_IP;
            it->len = len / 2;
            memcpy(it->ip, d, it->len);
            memcpy(it->mask, d + it->len, it->len);
        }
    }
    return 0;
}

int ca__nc_from_cert(X509 *cert, ca_constraints_t **out, char *err, size_t errlen)
{
    int crit = -1;
    NAME_CONSTRAINTS *nc = X509_get_ext_d2i(cert, NID_name_constraints, &crit, NULL);
    ca_constraints_t *c;
    int rc;

    *out = NULL;
    if (nc == NULL) {
        if (crit == -1) {
            ERR_clear_error();
            return 0; /* no name constraints */
        }
        ca__err_ssl(err, errlen, "the CA certificate's name constraints cannot be read");
        return PX_EPARSE;
    }
    c = ca_constraints_new();
    if (c == NULL) {
        NAME_CONSTRAINTS_free(nc);
        ca__err_set(err, errlen, "out of memory");
        return PX_ENOMEM;
    }
    rc = read_subtrees(c, nc->permittedSubtrees, 0);
    if (rc == 0) {
        rc = read_subtrees(c, nc->excludedSubtrees, 1);
    }
    NAME_CONSTRAINTS_free(nc);
    if (rc < 0) {
        ca__err_set(err, errlen, "the CA certificate's name constraints cannot be used (%s)",
                    rc == PX_ETOOBIG ? "too many" : "malformed");
        ca_constraints_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

/* ---- per-conversation CAs ---- */

#define CA__CONV_ROOT_CN "airlock conversation root"
#define CA__CONV_CN "airlock conversation CA"

/* Two certificates, both constrained: a root whose key exists only here (it signs the
 * intermediate and is freed), and the intermediate airlock keeps and signs leaves with. Java
 * (JDK 17) ignores a trust anchor's name constraints but enforces those of every certificate
 * in the path, so the constraints must sit on a certificate below the one the agent trusts. */
int ca_init_constrained(const char *confdir, const ca_constraints_t *c, int days, char *err,
                        size_t errlen)
{
    EVP_PKEY *root_key = NULL, *key = NULL;
    X509 *root = NULL, *cert = NULL;
    char path[CA_PATH_MAX];
    int rc;

    ca__err_set(err, errlen, "%s", "");
    if (confdir == NULL || confdir[0] == '\0' || c == NULL) {
        ca__err_set(err, errlen, "no confdir given");
        return PX_ECONFIG;
    }
    if (days < 1 || days > CA_CONV_MAX_DAYS) {
        ca__err_set(err, errlen, "a per-conversation CA is valid 1 to %d days", CA_CONV_MAX_DAYS);
        return PX_ECONFIG;
    }
    rc = ca__path_join(path, sizeof(path), confdir, CA_FILE_KEY_CERT, err, errlen);
    if (rc < 0) {
        return rc;
    }
    if (access(path, F_OK) == 0) {
        ca__err_set(err, errlen,
                    "%s already holds a CA; a per-conversation CA needs a directory of its own",
                    confdir);
        return PX_ECONFIG;
    }
    ca__gen_t rg = {CA__CONV_ROOT_CN, c, days, "critical,CA:TRUE,pathlen:1", NULL, NULL};
    rc = ca__generate(&rg, &root_key, &root, err, errlen);
    if (rc < 0) {
        return rc;
    }
    ca__gen_t ig = {CA__CONV_CN, c, days, "critical,CA:TRUE,pathlen:0", root_key, root};
    rc = ca__generate(&ig, &key, &cert, err, errlen);
    EVP_PKEY_free(root_key); /* nothing else is ever signed with it */
    if (rc < 0) {
        goto done;
    }
    rc = ca__mkdir_p(confdir, err, errlen);
    if (rc < 0) {
        goto done;
    }
    rc = ca__write_pem_file(confdir, CA_FILE_KEY_CERT, key, cert, CA__KEY_MODE, 1, err, errlen);
    if (rc == 1) {
        ca__err_set(err, errlen, "%s already holds a CA (created meanwhile)", confdir);
        rc = PX_ECONFIG;
    }
    if (rc == 0) {
        rc = ca__write_cert_files(confdir, root, err, errlen); /* what the agent trusts */
    }
done:
    X509_free(cert);
    EVP_PKEY_free(key);
    X509_free(root);
    return rc;
}
