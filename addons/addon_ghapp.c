#include "addons/addon_ghapp.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "addons/addon_ghrepos.h"
#include "base/px_b64.h"
#include "base/px_err.h"

#define GHAPP_ID_MAX 64     /* bytes of an app id or installation id */
#define GHAPP_PATH_MAX 1024 /* bytes of the base URL's path */
#define GHAPP_WHAT_MAX 128

struct addon_ghapp {
    char app_id[GHAPP_ID_MAX + 1];
    char installation_id[GHAPP_ID_MAX + 1];
    char host[ADDON_GHAPP_HOST_MAX + 1];
    uint16_t port;
    unsigned timeout; /* s */
    char *token_path; /* {base path}/app/installations/{id}/access_tokens */
    EVP_PKEY *key;
    json_t *permissions;  /* an object, or NULL */
    json_t *repositories; /* an array, or NULL */
    /* the cache */
    char token[ADDON_GHAPP_TOKEN_MAX + 1];
    size_t token_len;
    int64_t expires;
    addon_ghrepos_t *repos; /* the installation's repositories; NULL: unknown */
};

/* ---- parsing ------------------------------------------------------------------------------ */

static int ghapp_id_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
}

/* app_id: a string of [A-Za-z0-9._-] or a positive integer; installation_id: digits only. */
static int ghapp_id(const addon_yaml_node_t *n, const char *what, const char *key, int digits,
                    char *out, char *err, size_t errlen)
{
    const addon_yaml_node_t *v = addon_yaml_get(n, key);
    if (v == NULL)
        return addon_yaml_errorf(n, err, errlen, "%s: missing required key '%s'", what, key);
    addon_yaml_type_t t = addon_yaml_type(v);
    if (t != ADDON_YAML_INT && t != ADDON_YAML_STRING)
        return addon_yaml_errorf(v, err, errlen, "%s.%s: expected a string or an integer, got %s",
                                 what, key, addon_yaml_type_name(t));
    size_t len;
    const char *s = addon_yaml_text(v, &len);
    if (len == 0 || len > GHAPP_ID_MAX)
        return addon_yaml_errorf(v, err, errlen, "%s.%s: 1 to %d characters expected", what, key,
                                 GHAPP_ID_MAX);
    for (size_t i = 0; i < len; i++) {
        if (digits ? !(s[i] >= '0' && s[i] <= '9') : !ghapp_id_char(s[i]))
            return addon_yaml_errorf(v, err, errlen, "%s.%s: %s expected", what, key,
                                     digits ? "a positive integer"
                                            : "letters, digits, '.', '_' or '-'");
    }
    memcpy(out, s, len);
    out[len] = '\0';
    return 0;
}

static int ghapp_password_cb(char *buf, int size, int rwflag, void *u)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)u;
    return 0; /* an encrypted key is refused, never prompted for */
}

static int ghapp_key(const addon_yaml_node_t *n, const char *what, addon_ghapp_t *g, char *err,
                     size_t errlen)
{
    const addon_yaml_node_t *v = addon_yaml_get(n, "private_key");
    if (v == NULL)
        return addon_yaml_errorf(n, err, errlen, "%s: missing required key 'private_key'", what);
    if (addon_yaml_type(v) != ADDON_YAML_STRING)
        return addon_yaml_errorf(v, err, errlen, "%s.private_key: expected a string, got %s", what,
                                 addon_yaml_type_name(addon_yaml_type(v)));
    size_t len;
    const char *s = addon_yaml_text(v, &len);
    if (len > 64 * 1024) {
        addon_yaml_errorf(v, err, errlen, "%s.private_key: longer than 64 KiB", what);
        return PX_ETOOBIG;
    }
    ERR_clear_error();
    BIO *bio = BIO_new_mem_buf(s, (int)len);
    if (bio == NULL)
        return addon_yaml_errorf(v, err, errlen, "%s.private_key: out of memory", what);
    g->key = PEM_read_bio_PrivateKey(bio, NULL, ghapp_password_cb, NULL);
    BIO_free(bio);
    ERR_clear_error(); /* OpenSSL's queue is not reported: it names no more than this does */
    if (g->key == NULL)
        return addon_yaml_errorf(v, err, errlen,
                                 "%s.private_key: not an unencrypted PEM private key", what);
    if (EVP_PKEY_get_base_id(g->key) != EVP_PKEY_RSA)
        return addon_yaml_errorf(
            v, err, errlen, "%s.private_key: not an RSA key (GitHub App JWTs are RS256)", what);
    if (EVP_PKEY_get_bits(g->key) < 2048 || EVP_PKEY_get_bits(g->key) > 16384)
        return addon_yaml_errorf(
            v, err, errlen, "%s.private_key: RSA keys of 2048 to 16384 bits are accepted", what);
    return 0;
}

/* base_url: https://host[:port][/path], no user info, query or fragment; a trailing '/' is
 * dropped. The JWT goes there, so plain http is refused. */
static int ghapp_base(const addon_yaml_node_t *n, const char *what, addon_ghapp_t *g, char *err,
                      size_t errlen)
{
    const addon_yaml_node_t *v = addon_yaml_get(n, "base_url");
    const char *s = ADDON_GHAPP_DEFAULT_BASE;
    size_t len = strlen(s);
    if (v != NULL && addon_yaml_type(v) != ADDON_YAML_NULL) {
        if (addon_yaml_type(v) != ADDON_YAML_STRING)
            return addon_yaml_errorf(v, err, errlen, "%s.base_url: expected a string", what);
        s = addon_yaml_text(v, &len);
    } else {
        v = n;
    }
    if (len < 9 || strncasecmp(s, "https://", 8) != 0)
        return addon_yaml_errorf(v, err, errlen, "%s.base_url: an https:// URL expected", what);
    const char *h = s + 8;
    const char *end = s + len;
    const char *hend = h;
    while (hend < end && *hend != '/' && *hend != ':')
        hend++;
    size_t hlen = (size_t)(hend - h);
    if (hlen == 0 || hlen > ADDON_GHAPP_HOST_MAX)
        return addon_yaml_errorf(v, err, errlen, "%s.base_url: no host", what);
    for (size_t i = 0; i < hlen; i++) {
        char c = h[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-'))
            return addon_yaml_errorf(v, err, errlen,
                                     "%s.base_url: the host holds a character other than "
                                     "letters, digits, '.' and '-'",
                                     what);
        g->host[i] = (char)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
    }
    g->host[hlen] = '\0';
    g->port = 443;
    const char *p = hend;
    if (p < end && *p == ':') {
        unsigned long port = 0;
        p++;
        const char *ds = p;
        while (p < end && *p >= '0' && *p <= '9' && port <= 65535)
            port = port * 10 + (unsigned long)(*p++ - '0');
        if (p == ds || port == 0 || port > 65535 || (p < end && *p != '/'))
            return addon_yaml_errorf(v, err, errlen, "%s.base_url: invalid port", what);
        g->port = (uint16_t)port;
    }
    size_t plen = (size_t)(end - p);
    while (plen > 0 && p[plen - 1] == '/')
        plen--;
    if (plen > GHAPP_PATH_MAX)
        return addon_yaml_errorf(v, err, errlen, "%s.base_url: path too long", what);
    for (size_t i = 0; i < plen; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c <= 0x20 || c >= 0x7f || c == '?' || c == '#' || c == '@')
            return addon_yaml_errorf(v, err, errlen,
                                     "%s.base_url: the path holds a space, a control character, "
                                     "'?', '#' or '@'",
                                     what);
    }
    size_t cap = plen + strlen(g->installation_id) + 64;
    g->token_path = malloc(cap);
    if (g->token_path == NULL)
        return addon_yaml_errorf(v, err, errlen, "out of memory");
    snprintf(g->token_path, cap, "%.*s/app/installations/%s/access_tokens", (int)plen, p,
             g->installation_id);
    return 0;
}

static int ghapp_plain_string(const addon_yaml_node_t *v, const char *what, char *err,
                              size_t errlen)
{
    if (addon_yaml_type(v) != ADDON_YAML_STRING)
        return addon_yaml_errorf(v, err, errlen, "%s: expected a string, got %s", what,
                                 addon_yaml_type_name(addon_yaml_type(v)));
    size_t len;
    const char *s = addon_yaml_text(v, &len);
    if (len == 0 || len > 256)
        return addon_yaml_errorf(v, err, errlen, "%s: 1 to 256 bytes expected", what);
    for (size_t i = 0; i < len; i++) {
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return addon_yaml_errorf(v, err, errlen, "%s: contains a control character", what);
    }
    return 0;
}

/* permissions: {name: level, ...}; repositories: [name, ...]. Kept as JSON, in file order. */
static int ghapp_scoping(const addon_yaml_node_t *n, const char *what, addon_ghapp_t *g, char *err,
                         size_t errlen)
{
    char sub[GHAPP_WHAT_MAX];
    const addon_yaml_node_t *p = addon_yaml_get(n, "permissions");
    if (p != NULL && addon_yaml_type(p) != ADDON_YAML_NULL) {
        snprintf(sub, sizeof(sub), "%s.permissions", what);
        int rc = addon_yaml_expect(p, ADDON_YAML_MAP, sub, err, errlen);
        if (rc != 0)
            return rc;
        g->permissions = json_object();
        if (g->permissions == NULL)
            return PX_ENOMEM;
        for (size_t i = 0; i < addon_yaml_count(p); i++) {
            const addon_yaml_node_t *k = addon_yaml_key(p, i);
            const addon_yaml_node_t *val = addon_yaml_value(p, i);
            snprintf(sub, sizeof(sub), "%s.permissions[%zu]", what, i);
            if ((rc = ghapp_plain_string(k, sub, err, errlen)) != 0 ||
                (rc = ghapp_plain_string(val, sub, err, errlen)) != 0)
                return rc;
            size_t kl, vl;
            const char *ks = addon_yaml_text(k, &kl);
            const char *vs = addon_yaml_text(val, &vl);
            if (json_object_setn_new(g->permissions, ks, kl, json_stringn(vs, vl)) != 0)
                return PX_ENOMEM;
        }
    }
    const addon_yaml_node_t *r = addon_yaml_get(n, "repositories");
    if (r != NULL && addon_yaml_type(r) != ADDON_YAML_NULL) {
        snprintf(sub, sizeof(sub), "%s.repositories", what);
        int rc = addon_yaml_expect(r, ADDON_YAML_SEQ, sub, err, errlen);
        if (rc != 0)
            return rc;
        g->repositories = json_array();
        if (g->repositories == NULL)
            return PX_ENOMEM;
        for (size_t i = 0; i < addon_yaml_count(r); i++) {
            const addon_yaml_node_t *it = addon_yaml_item(r, i);
            snprintf(sub, sizeof(sub), "%s.repositories[%zu]", what, i);
            if ((rc = ghapp_plain_string(it, sub, err, errlen)) != 0)
                return rc;
            size_t l;
            const char *s = addon_yaml_text(it, &l);
            if (json_array_append_new(g->repositories, json_stringn(s, l)) != 0)
                return PX_ENOMEM;
        }
    }
    return 0;
}

int addon_ghapp_parse(const addon_yaml_node_t *n, const char *what, addon_ghapp_t **out, char *err,
                      size_t errlen)
{
    *out = NULL;
    addon_ghapp_t *g = calloc(1, sizeof(*g));
    if (g == NULL) {
        snprintf(err, errlen, "out of memory");
        return PX_ENOMEM;
    }
    int rc = ghapp_id(n, what, "app_id", 0, g->app_id, err, errlen);
    if (rc == 0)
        rc = ghapp_id(n, what, "installation_id", 1, g->installation_id, err, errlen);
    if (rc == 0)
        rc = ghapp_key(n, what, g, err, errlen);
    if (rc == 0)
        rc = ghapp_base(n, what, g, err, errlen);
    if (rc == 0)
        rc = ghapp_scoping(n, what, g, err, errlen);
    g->timeout = ADDON_GHAPP_TIMEOUT_DEFAULT;
    const addon_yaml_node_t *t = addon_yaml_get(n, "timeout");
    if (rc == 0 && t != NULL) {
        char sub[GHAPP_WHAT_MAX];
        int64_t secs;
        snprintf(sub, sizeof(sub), "%s.timeout", what);
        rc = addon_yaml_get_int(t, sub, 1, ADDON_GHAPP_TIMEOUT_MAX, &secs, err, errlen);
        if (rc == 0)
            g->timeout = (unsigned)secs;
    }
    if (rc != 0) {
        if (rc == PX_ENOMEM)
            snprintf(err, errlen, "out of memory");
        addon_ghapp_free(g);
        return rc;
    }
    *out = g;
    return 0;
}

void addon_ghapp_free(addon_ghapp_t *g)
{
    if (g == NULL)
        return;
    EVP_PKEY_free(g->key);
    json_decref(g->permissions);
    json_decref(g->repositories);
    free(g->token_path);
    addon_ghrepos_free(g->repos);
    OPENSSL_cleanse(g, sizeof(*g));
    free(g);
}

const char *addon_ghapp_host(const addon_ghapp_t *g)
{
    return g->host;
}

uint16_t addon_ghapp_port(const addon_ghapp_t *g)
{
    return g->port;
}

const char *addon_ghapp_token_path(const addon_ghapp_t *g)
{
    return g->token_path;
}

const char *addon_ghapp_app_id(const addon_ghapp_t *g)
{
    return g->app_id;
}

const char *addon_ghapp_installation_id(const addon_ghapp_t *g)
{
    return g->installation_id;
}

unsigned addon_ghapp_timeout(const addon_ghapp_t *g)
{
    return g->timeout;
}

/* ---- the JWT and the token exchange -------------------------------------------------------- */

/* base64url without padding of s[0..len) at out (room for 4*ceil(len/3)+1); returns the
 * length written. */
static size_t ghapp_b64url(const unsigned char *s, size_t len, char *out)
{
    long n = px_b64_encode_as(s, len, PX_B64_URL | PX_B64_NOPAD, out, (len + 2) / 3 * 4);
    out[n] = '\0';
    return (size_t)n;
}

int addon_ghapp_jwt(const addon_ghapp_t *g, int64_t now, char *out, size_t outlen, size_t *len)
{
    static const char header[] = "{\"alg\":\"RS256\",\"typ\":\"JWT\"}";
    char claims[256];
    int cn = snprintf(claims, sizeof(claims), "{\"iat\":%lld,\"exp\":%lld,\"iss\":\"%s\"}",
                      (long long)(now - ADDON_GHAPP_JWT_BACKDATE),
                      (long long)(now + ADDON_GHAPP_JWT_LIFETIME), g->app_id);
    size_t sigmax = (size_t)EVP_PKEY_get_size(g->key);
    size_t need =
        4 * ((sizeof(header) + 2) / 3) + 4 * (((size_t)cn + 2) / 3) + 4 * ((sigmax + 2) / 3) + 8;
    if (cn < 0 || (size_t)cn >= sizeof(claims) || need > outlen)
        return PX_ETOOBIG;
    size_t o = ghapp_b64url((const unsigned char *)header, sizeof(header) - 1, out);
    out[o++] = '.';
    o += ghapp_b64url((const unsigned char *)claims, (size_t)cn, out + o);
    unsigned char sig[2048];
    size_t siglen = sizeof(sig);
    ERR_clear_error();
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    int ok = md != NULL && sigmax <= sizeof(sig) &&
             EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, g->key) == 1 &&
             EVP_DigestSign(md, sig, &siglen, (const unsigned char *)out, o) == 1;
    EVP_MD_CTX_free(md);
    ERR_clear_error();
    if (!ok)
        return PX_ESIGNING;
    out[o++] = '.';
    o += ghapp_b64url(sig, siglen, out + o);
    *len = o;
    return 0;
}

int addon_ghapp_mint_body(const addon_ghapp_t *g, char **out, size_t *len)
{
    json_t *o = json_object();
    if (o == NULL)
        return PX_ENOMEM;
    if ((g->permissions != NULL && json_object_set(o, "permissions", g->permissions) != 0) ||
        (g->repositories != NULL && json_object_set(o, "repositories", g->repositories) != 0)) {
        json_decref(o);
        return PX_ENOMEM;
    }
    *out = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (*out == NULL)
        return PX_ENOMEM;
    *len = strlen(*out);
    return 0;
}

/* "YYYY-MM-DDTHH:MM:SSZ" (an optional fraction before the Z is allowed). */
static int ghapp_time(const char *s, int64_t *out)
{
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    int n = 0;
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &tm.tm_sec, &n) != 6 ||
        n != 19)
        return -1;
    const char *rest = s + n;
    if (*rest == '.') {
        rest++;
        while (*rest >= '0' && *rest <= '9')
            rest++;
    }
    if (strcmp(rest, "Z") != 0 || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 ||
        tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    *out = (int64_t)timegm(&tm);
    return 0;
}

int addon_ghapp_parse_token(const char *body, size_t len, char *tok, size_t toklen,
                            int64_t *expires, const char **why)
{
    json_error_t jerr;
    json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    int rc = PX_EPARSE;
    *why = "the answer is not a JSON object";
    if (o == NULL || !json_is_object(o))
        goto out;
    json_t *t = json_object_get(o, "token");
    json_t *e = json_object_get(o, "expires_at");
    *why = "the answer has no \"token\" string";
    if (!json_is_string(t))
        goto out;
    size_t tl = json_string_length(t);
    const char *ts = json_string_value(t);
    *why = "the token is empty, too long or holds a space or control character";
    if (tl == 0 || tl > ADDON_GHAPP_TOKEN_MAX || tl >= toklen)
        goto out;
    for (size_t i = 0; i < tl; i++) {
        if ((unsigned char)ts[i] <= 0x20 || (unsigned char)ts[i] >= 0x7f)
            goto out;
    }
    *why = "the answer has no valid \"expires_at\"";
    if (!json_is_string(e) || ghapp_time(json_string_value(e), expires) != 0)
        goto out;
    memcpy(tok, ts, tl);
    tok[tl] = '\0';
    *why = NULL;
    rc = 0;
out:
    if (o != NULL) {
        /* the token's bytes live in jansson's copy: wipe before letting go */
        json_t *t2 = json_is_object(o) ? json_object_get(o, "token") : NULL;
        if (json_is_string(t2))
            OPENSSL_cleanse((char *)json_string_value(t2), json_string_length(t2));
        json_decref(o);
    }
    return rc;
}

/* ---- the cache ------------------------------------------------------------------------------ */

int addon_ghapp_cache_valid(const addon_ghapp_t *g, int64_t now)
{
    return g->token_len > 0 && now < g->expires - ADDON_GHAPP_REFRESH_MARGIN;
}

const char *addon_ghapp_cache_token(const addon_ghapp_t *g, size_t *len)
{
    if (len != NULL)
        *len = g->token_len;
    return g->token;
}

int64_t addon_ghapp_cache_expires(const addon_ghapp_t *g)
{
    return g->expires;
}

void addon_ghapp_cache_set(addon_ghapp_t *g, const char *token, size_t len, int64_t expires)
{
    addon_ghapp_cache_clear(g);
    if (len > ADDON_GHAPP_TOKEN_MAX)
        return;
    memcpy(g->token, token, len);
    g->token[len] = '\0';
    g->token_len = len;
    g->expires = expires;
}

void addon_ghapp_cache_clear(addon_ghapp_t *g)
{
    OPENSSL_cleanse(g->token, sizeof(g->token));
    g->token_len = 0;
    g->expires = 0;
}

const addon_ghrepos_t *addon_ghapp_repos(const addon_ghapp_t *g)
{
    return g->repos;
}

void addon_ghapp_set_repos(addon_ghapp_t *g, addon_ghrepos_t *repos)
{
    addon_ghrepos_free(g->repos);
    g->repos = repos;
}

int addon_ghapp_repos_path(const addon_ghapp_t *g, unsigned page, char *out, size_t outlen)
{
    /* the base path is what precedes "/app/installations/{id}/access_tokens" */
    size_t tail =
        strlen("/app/installations/") + strlen(g->installation_id) + strlen("/access_tokens");
    size_t base = strlen(g->token_path) - tail;
    int n = snprintf(out, outlen, "%.*s/installation/repositories?per_page=%d&page=%u", (int)base,
                     g->token_path, ADDON_GHREPOS_PER_PAGE, page);
    return n < 0 || (size_t)n >= outlen ? PX_ETOOBIG : 0;
}
