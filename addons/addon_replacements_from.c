/* "value_from": where a masked entry's real value comes from when it is not written in the
 * replacements file (docs/replacements.md). env and file are read here, synchronously, each
 * time the file is loaded (start-up and SIGHUP), so a failure fails that load and the proxy
 * keeps the policy it had. The AWS sources are checked for shape, then their value is asked of
 * the proxy's store (addon_awssecret.h), which fetches it on the loop before the load that
 * uses it counts, and refreshes it in the background.
 *
 * Messages name the entry, the source (a variable name, a path) and the position; never a
 * value, and never a key or name that does not have the expected shape (in a damaged file it
 * could be a value). */
#include "addons/addon_replacements.h"
#include "addons/addon_replacements_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "addons/addon_awssecret.h"
#include "addons/addon_yaml.h"
#include "base/px_err.h"

#define ADDON__REPL_ENV_NAME_MAX 255    /* bytes of a variable name */
#define ADDON__REPL_PATH_MAX 4096       /* bytes of a path */
#define ADDON__REPL_AWS_ID_MAX 2048     /* bytes of a secret id, ARN or parameter name */
#define ADDON__REPL_AWS_REGION_MAX 32   /* bytes of a region name */
#define ADDON__REPL_REFRESH_MIN 60      /* s: the shortest refresh_seconds */
#define ADDON__REPL_REFRESH_MAX 86400   /* s: the longest refresh_seconds */
#define ADDON__REPL_REFRESH_DEFAULT 300 /* s: refresh_seconds when not given */
#define ADDON__REPL_SUB_MAX 160         /* "entry[1023].value_from.aws_secrets_manager.x" */

static const char *const from_keys[] = {"env", "file", "aws_secrets_manager", "aws_ssm", NULL};
static const char *const sm_keys[] = {"secret_id", "region", "json_key", "refresh_seconds", NULL};
static const char *const ssm_keys[] = {"name", "with_decryption", "region", "refresh_seconds",
                                       NULL};

static int from_nomem(char *err, size_t errlen)
{
    snprintf(err, errlen, "out of memory");
    return PX_ENOMEM;
}

/* A copy of the value s[0..len) into *out after the checks a literal value passes; label is
 * the source as messages show it ("the value of NAME", "the content of PATH"); is_file adds
 * what the file reader stripped to the messages. */
static int from_take(const addon_yaml_node_t *at, const char *sub, const char *label, int is_file,
                     const char *s, size_t len, addon_str_t *out, char *err, size_t errlen)
{
    if (len > ADDON_REPLACEMENTS_MAX_STRING) {
        addon_yaml_errorf(at, err, errlen, "%s: %s is longer than %d bytes%s", sub, label,
                          ADDON_REPLACEMENTS_MAX_STRING,
                          is_file ? " (one trailing newline is not counted)" : "");
        return PX_ETOOBIG;
    }
    if (addon__repl_has_ctl(s, len))
        return addon_yaml_errorf(at, err, errlen,
                                 "%s: %s contains a control character (%sa header value cannot "
                                 "carry CR, LF or NUL)",
                                 sub, label, is_file ? "one trailing newline is stripped; " : "");
    if (addon__repl_dup(s, len, 0, out) != 0)
        return from_nomem(err, errlen);
    return 0;
}

static int from_is_env_name(const char *s, size_t len)
{
    if (len == 0 || len > ADDON__REPL_ENV_NAME_MAX || (s[0] >= '0' && s[0] <= '9'))
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_'))
            return 0;
    }
    return 1;
}

/* {"env": "NAME"}: the variable of airlock's own environment. */
static int from_env(const addon_yaml_node_t *v, const char *sub, addon_str_t *out, addon_str_t *src,
                    char *err, size_t errlen)
{
    const char *name;
    size_t len;
    int rc = addon_yaml_get_string(v, sub, &name, &len, err, errlen);
    if (rc != 0)
        return rc;
    if (!from_is_env_name(name, len))
        return addon_yaml_errorf(v, err, errlen,
                                 "%s: not an environment variable name (letters, digits and '_', "
                                 "not starting with a digit, at most %d bytes)",
                                 sub, ADDON__REPL_ENV_NAME_MAX);
    char key[ADDON__REPL_ENV_NAME_MAX + 1];
    memcpy(key, name, len);
    key[len] = '\0';
    const char *val = getenv(key);
    if (val == NULL)
        return addon_yaml_errorf(v, err, errlen, "%s: %s is not set in airlock's environment", sub,
                                 key);
    if (val[0] == '\0')
        return addon_yaml_errorf(v, err, errlen, "%s: %s is empty", sub, key);
    char label[ADDON__REPL_ENV_NAME_MAX + 16];
    snprintf(label, sizeof(label), "the value of %s", key);
    rc = from_take(v, sub, label, 0, val, strlen(val), out, err, errlen);
    if (rc == 0) {
        char desc[ADDON__REPL_ENV_NAME_MAX + 8];
        snprintf(desc, sizeof(desc), "env %s", key);
        if (addon__repl_dup(desc, strlen(desc), 0, src) != 0)
            return from_nomem(err, errlen);
    }
    return rc;
}

/* Reads the regular file path into buf[0..cap]: *len bytes, or more than cap when it is larger.
 * A symlink is followed (Kubernetes secret volumes are symlinks into a timestamped folder).
 * Anything but a regular file is refused before it is opened (opening a device can act on it),
 * and again after (it may have been swapped); O_NONBLOCK so that a FIFO swapped in between
 * never makes open wait for a writer. */
static int from_read(const char *path, char *buf, size_t cap, size_t *len, int *not_regular)
{
    *not_regular = 0;
    *len = 0;
    struct stat pre;
    if (stat(path, &pre) != 0)
        return -errno;
    if (!S_ISREG(pre.st_mode)) {
        *not_regular = 1;
        return 0;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    if (!S_ISREG(st.st_mode)) {
        *not_regular = 1;
        close(fd);
        return 0;
    }
    int rc = 0;
    while (*len <= cap) {
        ssize_t n = read(fd, buf + *len, cap + 1 - *len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            break;
        }
        if (n == 0)
            break;
        *len += (size_t)n;
    }
    close(fd);
    return rc;
}

/* {"file": "/abs/path"}: the file's content, one trailing "\n" or "\r\n" stripped. */
static int from_file(const addon_yaml_node_t *v, const char *sub, addon_str_t *out,
                     addon_str_t *src, char *err, size_t errlen)
{
    const char *p;
    size_t plen;
    int rc = addon_yaml_get_string(v, sub, &p, &plen, err, errlen);
    if (rc != 0)
        return rc;
    if (plen == 0 || p[0] != '/')
        return addon_yaml_errorf(v, err, errlen, "%s: not an absolute path", sub);
    if (plen > ADDON__REPL_PATH_MAX) {
        addon_yaml_errorf(v, err, errlen, "%s: the path is longer than %d bytes", sub,
                          ADDON__REPL_PATH_MAX);
        return PX_ETOOBIG;
    }
    if (addon__repl_has_ctl(p, plen))
        return addon_yaml_errorf(v, err, errlen, "%s: the path contains a control character", sub);
    char path[ADDON__REPL_PATH_MAX + 1];
    memcpy(path, p, plen);
    path[plen] = '\0';
    char buf[ADDON_REPLACEMENTS_FROM_FILE_MAX + 1];
    size_t len;
    int not_regular;
    rc = from_read(path, buf, ADDON_REPLACEMENTS_FROM_FILE_MAX, &len, &not_regular);
    if (rc != 0) {
        OPENSSL_cleanse(buf, sizeof(buf));
        return addon_yaml_errorf(v, err, errlen, "%s: cannot open %s: %s", sub, path,
                                 strerror(-rc));
    }
    if (not_regular)
        return addon_yaml_errorf(v, err, errlen, "%s: %s is not a regular file", sub, path);
    if (len > ADDON_REPLACEMENTS_FROM_FILE_MAX) {
        OPENSSL_cleanse(buf, sizeof(buf));
        addon_yaml_errorf(v, err, errlen, "%s: %s is larger than %d bytes", sub, path,
                          ADDON_REPLACEMENTS_FROM_FILE_MAX);
        return PX_ETOOBIG;
    }
    /* echo and most editors end a file with a newline that is no part of the secret */
    if (len > 0 && buf[len - 1] == '\n') {
        len--;
        if (len > 0 && buf[len - 1] == '\r')
            len--;
    }
    if (len == 0)
        return addon_yaml_errorf(v, err, errlen, "%s: %s is empty", sub, path);
    char label[ADDON__REPL_PATH_MAX + 32];
    snprintf(label, sizeof(label), "the content of %s", path);
    rc = from_take(v, sub, label, 1, buf, len, out, err, errlen);
    OPENSSL_cleanse(buf, sizeof(buf));
    if (rc == 0) {
        char desc[ADDON__REPL_PATH_MAX + 8];
        snprintf(desc, sizeof(desc), "file %s", path);
        if (addon__repl_dup(desc, strlen(desc), 0, src) != 0)
            return from_nomem(err, errlen);
    }
    return rc;
}

/* A required or optional string field of an AWS source: 1 to max bytes, no control character. */
static int from_aws_string(const addon_yaml_node_t *n, const char *key, int required, size_t max,
                           const char *sub, char *err, size_t errlen)
{
    const addon_yaml_node_t *v = addon_yaml_get(n, key);
    if (v == NULL && required)
        return addon_yaml_errorf(n, err, errlen, "%s: missing required key '%s'", sub, key);
    if (v == NULL)
        return 0;
    char what[2 * ADDON__REPL_SUB_MAX];
    snprintf(what, sizeof(what), "%s.%s", sub, key);
    const char *s;
    size_t len;
    int rc = addon_yaml_get_string(v, what, &s, &len, err, errlen);
    if (rc != 0)
        return rc;
    if (len == 0)
        return addon_yaml_errorf(v, err, errlen, "%s: empty string", what);
    if (len > max) {
        addon_yaml_errorf(v, err, errlen, "%s: longer than %zu bytes", what, max);
        return PX_ETOOBIG;
    }
    if (addon__repl_has_ctl(s, len))
        return addon_yaml_errorf(v, err, errlen, "%s: contains a control character", what);
    return 0;
}

/* The fields both AWS sources share: region and refresh_seconds. */
static int from_aws_common(const addon_yaml_node_t *n, const char *sub, char *err, size_t errlen)
{
    char what[2 * ADDON__REPL_SUB_MAX];
    const addon_yaml_node_t *region = addon_yaml_get(n, "region");
    if (region != NULL) {
        snprintf(what, sizeof(what), "%s.region", sub);
        const char *s;
        size_t len;
        int rc = addon_yaml_get_string(region, what, &s, &len, err, errlen);
        if (rc != 0)
            return rc;
        int ok = len > 0 && len <= ADDON__REPL_AWS_REGION_MAX;
        for (size_t i = 0; ok && i < len; i++)
            ok = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-';
        if (!ok)
            return addon_yaml_errorf(region, err, errlen,
                                     "%s: not a region name (a-z, 0-9 and '-', at most %d bytes)",
                                     what, ADDON__REPL_AWS_REGION_MAX);
    }
    const addon_yaml_node_t *refresh = addon_yaml_get(n, "refresh_seconds");
    if (refresh != NULL) {
        snprintf(what, sizeof(what), "%s.refresh_seconds", sub);
        int64_t secs;
        return addon_yaml_get_int(refresh, what, ADDON__REPL_REFRESH_MIN, ADDON__REPL_REFRESH_MAX,
                                  &secs, err, errlen);
    }
    return 0;
}

/* A NUL-terminated copy of the string at key of n into buf[0..cap] (checked before), or NULL
 * when the key is absent. */
static const char *from_aws_cstr(const addon_yaml_node_t *n, const char *key, char *buf, size_t cap)
{
    const addon_yaml_node_t *v = addon_yaml_get(n, key);
    if (v == NULL)
        return NULL;
    size_t len;
    const char *s = addon_yaml_text(v, &len);
    if (len > cap)
        len = cap;
    memcpy(buf, s, len);
    buf[len] = '\0';
    return buf;
}

/* {"aws_secrets_manager": {...}} or {"aws_ssm": {...}}: the shape is checked, then the value is
 * asked of the proxy's store of fetched values (addon_awssecret.h), which fetches it before
 * the load that uses it, and refreshes it afterwards. */
static int from_aws(const addon_yaml_node_t *key, const addon_yaml_node_t *v, int ssm,
                    const char *sub, addon_str_t *out, addon_str_t *src, char *err, size_t errlen)
{
    int rc = addon_yaml_expect(v, ADDON_YAML_MAP, sub, err, errlen);
    if (rc == 0)
        rc = addon__repl_check_keys(v, ssm ? ssm_keys : sm_keys, sub, err, errlen);
    if (rc == 0)
        rc = from_aws_string(v, ssm ? "name" : "secret_id", 1, ADDON__REPL_AWS_ID_MAX, sub, err,
                             errlen);
    if (rc == 0 && !ssm)
        rc = from_aws_string(v, "json_key", 0, ADDON_REPLACEMENTS_MAX_STRING, sub, err, errlen);
    const addon_yaml_node_t *dec = ssm ? addon_yaml_get(v, "with_decryption") : NULL;
    int on = 1; /* a SecureString is what a secret is kept as: decrypt unless told not to */
    if (rc == 0 && dec != NULL) {
        char what[2 * ADDON__REPL_SUB_MAX];
        snprintf(what, sizeof(what), "%s.with_decryption", sub);
        rc = addon_yaml_get_bool(dec, what, &on, err, errlen);
    }
    if (rc == 0)
        rc = from_aws_common(v, sub, err, errlen);
    if (rc != 0)
        return rc;
    char id[ADDON__REPL_AWS_ID_MAX + 1], jkey[ADDON_REPLACEMENTS_MAX_STRING + 1];
    char region[ADDON__REPL_AWS_REGION_MAX + 1];
    addon_awssecret_src_t s = {.ssm = ssm, .with_decryption = on};
    s.id = from_aws_cstr(v, ssm ? "name" : "secret_id", id, ADDON__REPL_AWS_ID_MAX);
    s.region = from_aws_cstr(v, "region", region, ADDON__REPL_AWS_REGION_MAX);
    s.json_key = ssm ? NULL : from_aws_cstr(v, "json_key", jkey, ADDON_REPLACEMENTS_MAX_STRING);
    unsigned refresh = ADDON__REPL_REFRESH_DEFAULT;
    const addon_yaml_node_t *r = addon_yaml_get(v, "refresh_seconds");
    int64_t secs;
    if (r != NULL && addon_yaml_get_int(r, sub, ADDON__REPL_REFRESH_MIN, ADDON__REPL_REFRESH_MAX,
                                        &secs, err, errlen) == 0)
        refresh = (unsigned)secs;
    const char *val = NULL;
    size_t vlen = 0;
    char why[512];
    rc = addon_awssecret_lookup(&s, refresh, &val, &vlen, why, sizeof(why));
    if (rc != 0)
        return addon_yaml_errorf(key, err, errlen, "%s: cannot fetch %s: %s", sub, s.id, why);
    char label[ADDON__REPL_AWS_ID_MAX + 48];
    snprintf(label, sizeof(label), "the value fetched for %s", s.id);
    rc = from_take(v, sub, label, 0, val, vlen, out, err, errlen);
    if (rc == 0) {
        char desc[ADDON__REPL_AWS_ID_MAX + 48];
        snprintf(desc, sizeof(desc), "%s %s", ssm ? "aws_ssm" : "aws_secrets_manager", s.id);
        if (addon__repl_dup(desc, strlen(desc), 0, src) != 0)
            return from_nomem(err, errlen);
    }
    return rc;
}

int addon__repl_value_from(const addon_yaml_node_t *n, const char *what, addon_str_t *out,
                           addon_str_t *src, char *err, size_t errlen)
{
    char sub[ADDON__REPL_SUB_MAX];
    snprintf(sub, sizeof(sub), "%s.value_from", what);
    int rc = addon_yaml_expect(n, ADDON_YAML_MAP, sub, err, errlen);
    if (rc == 0)
        rc = addon__repl_check_keys(n, from_keys, sub, err, errlen);
    if (rc != 0)
        return rc;
    if (addon_yaml_count(n) != 1)
        return addon_yaml_errorf(n, err, errlen,
                                 "%s: give exactly one source (env, file, aws_secrets_manager "
                                 "or aws_ssm), got %zu",
                                 sub, addon_yaml_count(n));
    const addon_yaml_node_t *key = addon_yaml_key(n, 0);
    const addon_yaml_node_t *v = addon_yaml_value(n, 0);
    size_t klen;
    const char *k = addon_yaml_text(key, &klen);
    char ksub[ADDON__REPL_SUB_MAX + 32];
    snprintf(ksub, sizeof(ksub), "%s.%.*s", sub, (int)klen, k);
    if (klen == 3 && memcmp(k, "env", 3) == 0)
        return from_env(v, ksub, out, src, err, errlen);
    if (klen == 4 && memcmp(k, "file", 4) == 0)
        return from_file(v, ksub, out, src, err, errlen);
    return from_aws(key, v, klen == 7 /* aws_ssm */, ksub, out, src, err, errlen);
}
