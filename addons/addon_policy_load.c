/* Loading an allowlist file in any of its formats: detection by content, then the reader. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addons/addon_policy_int.h"
#include "addons/addon_yaml.h"
#include "base/px_err.h"

static const char *const policy_format_names[] = {
    [ADDON_POLICY_FORMAT_AUTO] = "auto",
    [ADDON_POLICY_FORMAT_NATIVE] = "native",
    [ADDON_POLICY_FORMAT_DOMAIN_LIST] = "domain-list",
    [ADDON_POLICY_FORMAT_AGENTBOX] = "agentbox",
};

const char *addon_policy_format_name(addon_policy_format_t fmt)
{
    if ((size_t)fmt < sizeof(policy_format_names) / sizeof(policy_format_names[0]))
        return policy_format_names[fmt];
    return "unknown";
}

int addon_policy_format_parse(const char *s, addon_policy_format_t *out)
{
    for (size_t i = 0; i < sizeof(policy_format_names) / sizeof(policy_format_names[0]); i++) {
        if (strcmp(s, policy_format_names[i]) == 0) {
            *out = (addon_policy_format_t)i;
            return 0;
        }
    }
    return PX_ECONFIG;
}

static int detect_bare(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

static size_t detect_ws(const char *s, size_t len, size_t i)
{
    while (i < len && (s[i] == ' ' || s[i] == '\t'))
        i++;
    return i;
}

/* A TOML key at s[i..): bare or quoted segments joined by dots. The index after it and its
 * trailing blanks, or 0 when there is none. */
static size_t detect_key(const char *s, size_t len, size_t i)
{
    for (;;) {
        i = detect_ws(s, len, i);
        if (i < len && (s[i] == '"' || s[i] == '\'')) {
            char q = s[i++];
            while (i < len && s[i] != q)
                i += q == '"' && s[i] == '\\' && i + 1 < len ? 2 : 1;
            if (i >= len)
                return 0;
            i++;
        } else if (i < len && detect_bare(s[i])) {
            while (i < len && detect_bare(s[i]))
                i++;
        } else {
            return 0;
        }
        i = detect_ws(s, len, i);
        if (i >= len || s[i] != '.')
            return i;
        i++;
    }
}

/* A TOML table header ("[network]", "[[x.y]]") or key/value line ("a.b = 1"). */
static int detect_toml_line(const char *s, size_t len)
{
    size_t i;
    if (s[0] == '[') {
        size_t open = len > 1 && s[1] == '[' ? 2 : 1;
        i = detect_key(s, len, open);
        if (i == 0 || i + open > len || s[i] != ']' || (open == 2 && s[i + 1] != ']'))
            return 0;
        i = detect_ws(s, len, i + open);
        return i == len || s[i] == '#';
    }
    i = detect_key(s, len, 0);
    return i > 0 && i < len && s[i] == '=';
}

/* A line that starts like YAML or JSON: "{", "- ", "---", "key:" (plain or quoted key). */
static int detect_yaml_line(const char *s, size_t len)
{
    if (s[0] == '{' || (len >= 3 && memcmp(s, "---", 3) == 0))
        return 1;
    if (s[0] == '-' && (len == 1 || s[1] == ' ' || s[1] == '\t'))
        return 1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == ':')
            return i + 1 == len || s[i + 1] == ' ' || s[i + 1] == '\t';
        if (s[i] == ' ' || s[i] == '\t' || s[i] == '#')
            return 0;
    }
    return 0;
}

addon_policy_format_t addon_policy_format_detect(const char *data, size_t len)
{
    addon_policy_format_t first = ADDON_POLICY_FORMAT_AUTO;
    size_t pos = 0;
    if (len >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0)
        pos = 3;
    while (pos < len) {
        const char *nl = memchr(data + pos, '\n', len - pos);
        size_t end = nl != NULL ? (size_t)(nl - data) : len;
        const char *s = data + pos;
        size_t n = end - pos;
        pos = end + 1;
        while (n > 0 && (*s == ' ' || *s == '\t')) {
            s++;
            n--;
        }
        while (n > 0 && (s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
            n--;
        if (n == 0 || s[0] == '#')
            continue;
        /* TOML anywhere wins: agentbox configs often start with other keys before [network]. */
        if (detect_toml_line(s, n))
            return ADDON_POLICY_FORMAT_AGENTBOX;
        if (first == ADDON_POLICY_FORMAT_AUTO)
            first = detect_yaml_line(s, n) ? ADDON_POLICY_FORMAT_NATIVE
                                           : ADDON_POLICY_FORMAT_DOMAIN_LIST;
    }
    return first == ADDON_POLICY_FORMAT_AUTO ? ADDON_POLICY_FORMAT_NATIVE : first;
}

int addon__policy_load(const char *name, const char *data, size_t len, addon_policy_format_t fmt,
                       int read_files, addon_policy_t **out, char *err, size_t errlen)
{
    char dummy[1];
    if (err == NULL || errlen == 0) {
        err = dummy;
        errlen = sizeof(dummy);
    }
    err[0] = '\0';
    *out = NULL;
    if (fmt == ADDON_POLICY_FORMAT_AUTO)
        fmt = addon_policy_format_detect(data, len);
    addon_policy_t *p = addon__policy_new(name, fmt);
    if (p == NULL) {
        snprintf(err, errlen, "out of memory");
        return PX_ENOMEM;
    }
    int rc;
    switch (fmt) {
    case ADDON_POLICY_FORMAT_DOMAIN_LIST:
        rc = addon__domainlist_read(p, p->name, data, len, NULL, err, errlen);
        break;
    case ADDON_POLICY_FORMAT_AGENTBOX:
        rc = addon__agentbox_read(p, p->name, data, len, read_files, err, errlen);
        break;
    default:
        rc = addon__policy_yaml_read(p, p->name, data, len, err, errlen);
        break;
    }
    if (rc != 0) {
        addon__policy_free(p);
        return rc;
    }
    for (size_t i = 0; i < p->urls.n; i++)
        p->ngraphql += p->urls.v[i].graphql != NULL;
    *out = p;
    return 0;
}

int addon_policy_load_buffer(const char *name, const char *data, size_t len, addon_policy_t **out,
                             char *err, size_t errlen)
{
    return addon__policy_load(name, data, len, ADDON_POLICY_FORMAT_NATIVE, 1, out, err, errlen);
}

int addon_policy_load_buffer_as(const char *name, const char *data, size_t len,
                                addon_policy_format_t fmt, addon_policy_t **out, char *err,
                                size_t errlen)
{
    return addon__policy_load(name, data, len, fmt, 1, out, err, errlen);
}

int addon_policy_load_file_as(const char *path, addon_policy_format_t fmt, addon_policy_t **out,
                              char *err, size_t errlen)
{
    char dummy[1];
    if (err == NULL || errlen == 0) {
        err = dummy;
        errlen = sizeof(dummy);
    }
    *out = NULL;
    char *buf = NULL;
    size_t len = 0;
    int rc = addon_yaml_read_file(path, &buf, &len, err, errlen);
    if (rc != 0)
        return rc;
    rc = addon__policy_load(path, buf, len, fmt, 1, out, err, errlen);
    free(buf);
    return rc;
}

int addon_policy_load_file(const char *path, addon_policy_t **out, char *err, size_t errlen)
{
    return addon_policy_load_file_as(path, ADDON_POLICY_FORMAT_AUTO, out, err, errlen);
}
