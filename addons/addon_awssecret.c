/* Secrets Manager and SSM values for "value_from": credentials, endpoint, signed request and
 * the answer's parser (addon_awssecret.h). */
#include "addons/addon_awssecret.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/crypto.h>

#include "base/px_err.h"
#include "signing/sig_v4.h"

#define ADDON__AWS_TYPE_MAX 64 /* bytes of an AWS error type quoted in a message */

void addon_awssecret_creds_wipe(addon_awssecret_creds_t *c)
{
    OPENSSL_cleanse(c, sizeof(*c));
}

/* Copies s into dst[0..cap] when it fits: 0, else PX_ETOOBIG. */
static int aws_copy(char *dst, size_t cap, const char *s, size_t len)
{
    if (len > cap)
        return PX_ETOOBIG;
    memcpy(dst, s, len);
    dst[len] = '\0';
    return 0;
}

static const char *aws_trim(const char *s, const char *end, const char **out_end)
{
    while (s < end && (*s == ' ' || *s == '\t'))
        s++;
    while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
        end--;
    *out_end = end;
    return s;
}

/* The [profile] section of an INI-style credentials file held in buf[0..len). */
static int aws_creds_parse(const char *buf, size_t len, const char *profile,
                           addon_awssecret_creds_t *c)
{
    int in = 0, rc = 0;
    const char *p = buf, *end = buf + len;
    while (p < end && rc == 0) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl != NULL ? nl : end;
        const char *e;
        const char *s = aws_trim(p, le, &e);
        p = nl != NULL ? nl + 1 : end;
        if (s == e || *s == '#' || *s == ';')
            continue;
        if (*s == '[') {
            const char *n = aws_trim(s + 1, e[-1] == ']' ? e - 1 : e, &e);
            in = (size_t)(e - n) == strlen(profile) && memcmp(n, profile, (size_t)(e - n)) == 0;
            continue;
        }
        const char *eq = memchr(s, '=', (size_t)(e - s));
        if (!in || eq == NULL)
            continue;
        const char *ke, *ve;
        const char *k = aws_trim(s, eq, &ke);
        const char *v = aws_trim(eq + 1, e, &ve);
        size_t kl = (size_t)(ke - k), vl = (size_t)(ve - v);
        if (kl == 17 && memcmp(k, "aws_access_key_id", kl) == 0)
            rc = aws_copy(c->akid, ADDON_AWSSECRET_AKID_MAX, v, vl);
        else if (kl == 21 && memcmp(k, "aws_secret_access_key", kl) == 0)
            rc = aws_copy(c->secret, ADDON_AWSSECRET_SECRET_MAX, v, vl);
        else if (kl == 17 && memcmp(k, "aws_session_token", kl) == 0)
            rc = aws_copy(c->token, ADDON_AWSSECRET_TOKEN_MAX, v, vl);
    }
    return rc;
}

static int aws_creds_file(addon_awssecret_creds_t *c, char *err, size_t errlen)
{
    char path[4096];
    const char *f = getenv("AWS_SHARED_CREDENTIALS_FILE");
    const char *home = getenv("HOME");
    if (f != NULL && f[0] != '\0')
        snprintf(path, sizeof(path), "%s", f);
    else if (home != NULL && home[0] != '\0')
        snprintf(path, sizeof(path), "%s/.aws/credentials", home);
    else {
        snprintf(err, errlen,
                 "no AWS credentials: AWS_ACCESS_KEY_ID is not set and there is no "
                 "credentials file (AWS_SHARED_CREDENTIALS_FILE, HOME)");
        return PX_ENOENT;
    }
    const char *profile = getenv("AWS_PROFILE");
    if (profile == NULL || profile[0] == '\0')
        profile = "default";
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        snprintf(err, errlen,
                 "no AWS credentials: AWS_ACCESS_KEY_ID is not set and the credentials file %s "
                 "cannot be opened: %s",
                 path, strerror(errno));
        return PX_ENOENT;
    }
    char *buf = malloc(ADDON_AWSSECRET_CRED_FILE_MAX + 1);
    size_t len = 0;
    ssize_t n = 1;
    while (buf != NULL && len <= ADDON_AWSSECRET_CRED_FILE_MAX && n > 0) {
        n = read(fd, buf + len, ADDON_AWSSECRET_CRED_FILE_MAX + 1 - len);
        if (n < 0 && errno == EINTR)
            n = 1;
        else if (n > 0)
            len += (size_t)n;
    }
    close(fd);
    if (buf == NULL || n < 0 || len > ADDON_AWSSECRET_CRED_FILE_MAX) {
        if (buf != NULL)
            OPENSSL_cleanse(buf, len);
        free(buf);
        snprintf(err, errlen, "the credentials file %s cannot be read (or is over %d bytes)", path,
                 ADDON_AWSSECRET_CRED_FILE_MAX);
        return buf == NULL ? PX_ENOMEM : PX_EIO;
    }
    int rc = aws_creds_parse(buf, len, profile, c);
    OPENSSL_cleanse(buf, len);
    free(buf);
    if (rc == 0 && (c->akid[0] == '\0' || c->secret[0] == '\0'))
        rc = PX_ENOENT;
    if (rc != 0)
        snprintf(err, errlen,
                 "the credentials file %s has no usable profile [%s] (aws_access_key_id and "
                 "aws_secret_access_key, each within its cap)",
                 path, profile);
    return rc;
}

int addon_awssecret_creds_load(addon_awssecret_creds_t *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof(*c));
    const char *ak = getenv("AWS_ACCESS_KEY_ID");
    const char *sk = getenv("AWS_SECRET_ACCESS_KEY");
    const char *tk = getenv("AWS_SESSION_TOKEN");
    int rc;
    if (ak == NULL || sk == NULL || ak[0] == '\0' || sk[0] == '\0')
        rc = aws_creds_file(c, err, errlen);
    else if ((rc = aws_copy(c->akid, ADDON_AWSSECRET_AKID_MAX, ak, strlen(ak))) != 0 ||
             (rc = aws_copy(c->secret, ADDON_AWSSECRET_SECRET_MAX, sk, strlen(sk))) != 0 ||
             (tk != NULL &&
              (rc = aws_copy(c->token, ADDON_AWSSECRET_TOKEN_MAX, tk, strlen(tk))) != 0))
        snprintf(err, errlen, "an AWS credential variable of the environment is over its cap");
    for (const char *s = c->token; rc == 0 && *s != '\0'; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            rc = PX_EPARSE;
    for (const char *s = c->akid; rc == 0 && *s != '\0'; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z')))
            rc = PX_EPARSE;
    if (rc == PX_EPARSE)
        snprintf(err, errlen,
                 "the AWS access key id or session token holds a byte that cannot "
                 "go into a header");
    if (rc != 0)
        addon_awssecret_creds_wipe(c);
    return rc;
}

const char *addon_awssecret_endpoint_env(int ssm)
{
    const char *e = getenv(ssm ? "AWS_ENDPOINT_URL_SSM" : "AWS_ENDPOINT_URL_SECRETS_MANAGER");
    if (e == NULL || e[0] == '\0')
        e = getenv("AWS_ENDPOINT_URL");
    return e != NULL && e[0] != '\0' ? e : NULL;
}

const char *addon_awssecret_region(const addon_awssecret_src_t *src)
{
    const char *r = src->region;
    if (r == NULL || r[0] == '\0')
        r = getenv("AWS_REGION");
    if (r == NULL || r[0] == '\0')
        r = getenv("AWS_DEFAULT_REGION");
    return r != NULL && r[0] != '\0' ? r : NULL;
}

static int aws_region_ok(const char *r)
{
    size_t n = strlen(r);
    if (n == 0 || n > ADDON_AWSSECRET_REGION_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((r[i] >= 'a' && r[i] <= 'z') || (r[i] >= '0' && r[i] <= '9') || r[i] == '-'))
            return 0;
    return 1;
}

/* http[s]://host[:port][/]: the host a-z 0-9 . - (lower-cased), the port 1-65535. */
static int aws_endpoint(const char *url, addon_awssecret_req_t *out)
{
    const char *p;
    if (strncmp(url, "https://", 8) == 0) {
        out->tls = 1;
        out->port = 443;
        p = url + 8;
    } else if (strncmp(url, "http://", 7) == 0) {
        out->tls = 0;
        out->port = 80;
        p = url + 7;
    } else {
        return PX_ECONFIG;
    }
    size_t h = 0;
    while (p[h] != '\0' && p[h] != ':' && p[h] != '/') {
        char c = p[h];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-') ||
            h >= ADDON_AWSSECRET_HOST_MAX)
            return PX_ECONFIG;
        out->host[h++] = c;
    }
    out->host[h] = '\0';
    if (h == 0)
        return PX_ECONFIG;
    p += h;
    if (*p == ':') {
        char *e;
        errno = 0;
        long port = strtol(p + 1, &e, 10);
        if (e == p + 1 || errno != 0 || port < 1 || port > 65535)
            return PX_ECONFIG;
        out->port = (uint16_t)port;
        p = e;
    }
    if (strcmp(p, "") != 0 && strcmp(p, "/") != 0)
        return PX_ECONFIG;
    int dflt = out->port == (out->tls ? 443 : 80);
    snprintf(out->host_header, sizeof(out->host_header), dflt ? "%s" : "%s:%u", out->host,
             (unsigned)out->port);
    return 0;
}

static int aws_body(const addon_awssecret_src_t *src, addon_awssecret_req_t *out)
{
    json_t *o =
        src->ssm ? json_pack("{s:s, s:b}", "Name", src->id, "WithDecryption", src->with_decryption)
                 : json_pack("{s:s}", "SecretId", src->id);
    if (o == NULL)
        return PX_EPARSE; /* not UTF-8 */
    size_t n = json_dumpb(o, out->body, sizeof(out->body), JSON_COMPACT);
    json_decref(o);
    if (n == 0 || n > sizeof(out->body))
        return PX_ETOOBIG;
    out->blen = n;
    return 0;
}

/* The Authorization value over the request's signed headers (sorted by name). */
static int aws_sign(const addon_awssecret_req_t *out, const char *region, const char *service,
                    const addon_awssecret_creds_t *c, char *auth, size_t cap, size_t *alen)
{
    sig_header_t h[5] = {
        {SIG_STR("content-type"), SIG_STR(ADDON_AWSSECRET_CONTENT_TYPE)},
        {SIG_STR("host"), {out->host_header, strlen(out->host_header)}},
        {SIG_STR("x-amz-date"), {out->amz_date, 16}},
        {SIG_STR("x-amz-security-token"), {c->token, strlen(c->token)}},
        {SIG_STR("x-amz-target"), {out->target, strlen(out->target)}},
    };
    size_t nh = c->token[0] != '\0' ? 5 : 4;
    if (nh == 4)
        h[3] = h[4];
    sig_names_t names = {.n = 0};
    for (size_t i = 0; i < nh; i++)
        names.name[names.n++] = h[i].name;
    char hash[SIG_SHA256_HEX_LEN];
    if (sig_sha256_hex(out->body, out->blen, hash) != 0)
        return PX_ECRYPTO;
    sig_canon_t cn = {.method = SIG_STR("POST"),
                      .path = SIG_STR("/"),
                      .query = {"", 0},
                      .headers = h,
                      .nheaders = nh,
                      .names = &names,
                      .payload_hash = {hash, SIG_SHA256_HEX_LEN},
                      .uri_mode = SIG_URI_NORMALIZE};
    char scope[128];
    int sl =
        snprintf(scope, sizeof(scope), "%.8s/%s/%s/aws4_request", out->amz_date, region, service);
    char cbuf[8192], sbuf[512], chash[SIG_SHA256_HEX_LEN], sig[SIG_V4_SIG_LEN];
    sig_buf_t creq, sts;
    sig_buf_init(&creq, cbuf, sizeof(cbuf), SIG_CANON_MAX);
    sig_buf_init(&sts, sbuf, sizeof(sbuf), sizeof(sbuf));
    unsigned char key[SIG_SHA256_LEN];
    int rc = sig_canonical_request(&creq, &cn);
    if (rc == 0)
        rc = sig_sha256_hex(creq.base, creq.len, chash);
    if (rc == 0)
        rc = sig_string_to_sign(&sts, SIG_LABEL_V4, (sig_str_t){out->amz_date, 16},
                                (sig_str_t){scope, (size_t)sl}, chash);
    if (rc == 0)
        rc = sig_v4_signing_key((sig_str_t){c->secret, strlen(c->secret)},
                                (sig_str_t){out->amz_date, 8}, (sig_str_t){region, strlen(region)},
                                (sig_str_t){service, strlen(service)}, key);
    if (rc == 0)
        rc = sig_v4_signature(key, sts.base, sts.len, sig);
    OPENSSL_cleanse(key, sizeof(key));
    sig_buf_free(&creq);
    sig_buf_free(&sts);
    if (rc != 0)
        return rc;
    char list[128];
    sig_buf_t lb;
    sig_buf_init(&lb, list, sizeof(list), sizeof(list));
    sig_names_join(&names, &lb);
    int n = snprintf(auth, cap, "%s Credential=%s/%s, SignedHeaders=%.*s, Signature=%.*s",
                     SIG_LABEL_V4, c->akid, scope, (int)lb.len, lb.base, SIG_V4_SIG_LEN, sig);
    if (lb.err != 0 || n < 0 || (size_t)n >= cap)
        return PX_ETOOBIG;
    *alen = (size_t)n;
    return 0;
}

int addon_awssecret_request(const addon_awssecret_src_t *src, const char *region,
                            const addon_awssecret_creds_t *c, const char *endpoint, int64_t now,
                            addon_awssecret_req_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    const char *service = src->ssm ? "ssm" : "secretsmanager";
    if (region == NULL || !aws_region_ok(region)) {
        snprintf(err, errlen, "no region (give \"region\", or set AWS_REGION)");
        return PX_ECONFIG;
    }
    char dflt[128];
    if (endpoint == NULL) {
        snprintf(dflt, sizeof(dflt), "https://%s.%s.amazonaws.com", service, region);
        endpoint = dflt;
    }
    if (aws_endpoint(endpoint, out) != 0) {
        snprintf(err, errlen, "the endpoint URL is not http[s]://host[:port][/]");
        return PX_ECONFIG;
    }
    out->target = src->ssm ? "AmazonSSM.GetParameter" : "secretsmanager.GetSecretValue";
    time_t t = (time_t)now;
    struct tm tm;
    if (gmtime_r(&t, &tm) == NULL ||
        strftime(out->amz_date, sizeof(out->amz_date), "%Y%m%dT%H%M%SZ", &tm) != 16) {
        snprintf(err, errlen, "the clock is out of range");
        return PX_ECONFIG;
    }
    int rc = aws_body(src, out);
    if (rc != 0) {
        snprintf(err, errlen, "the request body cannot be built (the id is not UTF-8 or too long)");
        return rc;
    }
    rc = aws_sign(out, region, service, c, out->auth, sizeof(out->auth), &out->alen);
    if (rc != 0)
        snprintf(err, errlen, "the request cannot be signed: %s", px_strerror(rc));
    return rc;
}

/* The AWS error type of an answer ("ThrottlingException"), from __type (its part after '#')
 * or the x-amzn-ErrorType shape; only [A-Za-z0-9._] is quoted. */
static void aws_error_type(json_t *o, char *out, size_t cap)
{
    snprintf(out, cap, "an error");
    const char *t = json_string_value(json_object_get(o, "__type"));
    if (t == NULL)
        return;
    const char *h = strrchr(t, '#');
    if (h != NULL)
        t = h + 1;
    size_t n = strlen(t);
    if (n == 0 || n > ADDON__AWS_TYPE_MAX || n >= cap)
        return;
    for (size_t i = 0; i < n; i++)
        if (!((t[i] >= 'A' && t[i] <= 'Z') || (t[i] >= 'a' && t[i] <= 'z') ||
              (t[i] >= '0' && t[i] <= '9') || t[i] == '.' || t[i] == '_'))
            return;
    memcpy(out, t, n + 1);
}

static int aws_is_throttle(const char *type)
{
    static const char *const retry[] = {"ThrottlingException",      "Throttling",
                                        "TooManyRequestsException", "RequestLimitExceeded",
                                        "ThrottledException",       NULL};
    for (size_t i = 0; retry[i] != NULL; i++)
        if (strcmp(type, retry[i]) == 0)
            return 1;
    return 0;
}

/* The value v (a JSON string) into value[0..cap). */
static int aws_take(json_t *v, char *value, size_t cap, size_t *vlen, const char *what, char *err,
                    size_t errlen)
{
    if (!json_is_string(v)) {
        snprintf(err, errlen, "the answer has no %s string", what);
        return PX_EPARSE;
    }
    size_t n = json_string_length(v);
    if (n > cap) {
        snprintf(err, errlen, "the %s is longer than %zu bytes", what, cap);
        return PX_ETOOBIG;
    }
    if (n == 0) {
        snprintf(err, errlen, "the %s is empty", what);
        return PX_EPARSE;
    }
    memcpy(value, json_string_value(v), n);
    *vlen = n;
    return 0;
}

/* The json_key of the SecretString s: the secret is a JSON object of strings. */
static int aws_json_key(json_t *s, const char *key, char *value, size_t cap, size_t *vlen,
                        char *err, size_t errlen)
{
    if (!json_is_string(s)) {
        snprintf(err, errlen, "the answer has no SecretString (a binary secret is not supported)");
        return PX_EPARSE;
    }
    json_error_t jerr;
    json_t *o =
        json_loadb(json_string_value(s), json_string_length(s), JSON_REJECT_DUPLICATES, &jerr);
    OPENSSL_cleanse(jerr.text, sizeof(jerr.text)); /* it may quote the secret */
    OPENSSL_cleanse(jerr.source, sizeof(jerr.source));
    if (!json_is_object(o)) {
        json_decref(o);
        snprintf(err, errlen, "json_key is given but the SecretString is not a JSON object");
        return PX_EPARSE;
    }
    json_t *v = json_object_get(o, key);
    int rc;
    if (v == NULL) {
        snprintf(err, errlen, "the SecretString has no key named by json_key");
        rc = PX_ENOENT;
    } else {
        rc = aws_take(v, value, cap, vlen, "json_key's value", err, errlen);
        if (json_is_string(v))
            OPENSSL_cleanse((char *)json_string_value(v), json_string_length(v));
    }
    json_decref(o);
    return rc;
}

int addon_awssecret_parse(const addon_awssecret_src_t *src, int status, const char *body,
                          size_t len, char *value, size_t cap, size_t *vlen, int *retry, char *err,
                          size_t errlen)
{
    *retry = status == 429 || status >= 500;
    *vlen = 0;
    if (len > ADDON_AWSSECRET_RESP_MAX) {
        snprintf(err, errlen, "HTTP %d: the answer is over %d bytes", status,
                 ADDON_AWSSECRET_RESP_MAX);
        return PX_ETOOBIG;
    }
    json_error_t jerr;
    json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    OPENSSL_cleanse(jerr.text, sizeof(jerr.text));
    OPENSSL_cleanse(jerr.source, sizeof(jerr.source));
    if (status != 200) {
        char type[ADDON__AWS_TYPE_MAX + 1];
        aws_error_type(o, type, sizeof(type));
        json_decref(o);
        *retry = *retry || aws_is_throttle(type);
        snprintf(err, errlen, "AWS answered HTTP %d, %s", status, type);
        return PX_EPARSE;
    }
    if (!json_is_object(o)) {
        json_decref(o);
        snprintf(err, errlen, "HTTP 200 but the answer is not a JSON object");
        return PX_EPARSE;
    }
    int rc;
    json_t *s;
    if (src->ssm) {
        s = json_object_get(json_object_get(o, "Parameter"), "Value");
        rc = aws_take(s, value, cap, vlen, "Parameter.Value", err, errlen);
    } else {
        s = json_object_get(o, "SecretString");
        if (src->json_key != NULL)
            rc = aws_json_key(s, src->json_key, value, cap, vlen, err, errlen);
        else if (s == NULL && json_object_get(o, "SecretBinary") != NULL) {
            snprintf(err, errlen,
                     "the secret is binary (SecretBinary); only SecretString is "
                     "supported");
            rc = PX_EPARSE;
        } else
            rc = aws_take(s, value, cap, vlen, "SecretString", err, errlen);
    }
    if (json_is_string(s))
        OPENSSL_cleanse((char *)json_string_value(s), json_string_length(s));
    json_decref(o);
    return rc;
}

static addon_awssecret_lookup_cb aws_lookup_cb;
static void *aws_lookup_arg;

void addon_awssecret_set_lookup(addon_awssecret_lookup_cb cb, void *arg)
{
    aws_lookup_cb = cb;
    aws_lookup_arg = arg;
}

int addon_awssecret_lookup(const addon_awssecret_src_t *src, unsigned refresh_seconds,
                           const char **value, size_t *vlen, char *why, size_t whylen)
{
    if (aws_lookup_cb == NULL) {
        snprintf(why, whylen, "only `airlock run` without --sandboxes fetches from AWS");
        return PX_EUNSUPPORTED;
    }
    return aws_lookup_cb(aws_lookup_arg, src, refresh_seconds, value, vlen, why, whylen);
}
