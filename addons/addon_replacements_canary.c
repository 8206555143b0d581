/* The replacement map's canary list (addon_replacements.h): strings planted in the sandbox
 * that no request may carry. A value may hold any byte (a line of a planted file): it is only
 * ever searched for (addon_leak), never sent, and never quoted in a message. */
#include "addons/addon_replacements_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "base/px_err.h"

#define ADDON__CANARY_WHAT_MAX 48 /* "canaries[1023].value" */

static int canary_dup(const char *s, size_t len, addon_str_t *out, char *err, size_t errlen)
{
    char *d = malloc(len + 1);
    if (d == NULL) {
        snprintf(err, errlen, "out of memory");
        return PX_ENOMEM;
    }
    memcpy(d, s, len);
    d[len] = '\0';
    out->base = d;
    out->len = len;
    return 0;
}

int addon__repl_is_canaries(const addon_yaml_node_t *key, const addon_yaml_node_t *value)
{
    size_t klen = 0;
    const char *k = addon_yaml_type(key) == ADDON_YAML_STRING ? addon_yaml_text(key, &klen) : NULL;
    return k != NULL && klen == 8 && memcmp(k, "canaries", 8) == 0 &&
           addon_yaml_type(value) == ADDON_YAML_SEQ;
}

/* Keys are not quoted: in a damaged file a value can end up in key position. */
static int canary_keys(const addon_yaml_node_t *n, const char *what, char *err, size_t errlen)
{
    for (size_t i = 0; i < addon_yaml_count(n); i++) {
        size_t klen;
        const char *k = addon_yaml_text(addon_yaml_key(n, i), &klen);
        if (!(klen == 4 && memcmp(k, "name", 4) == 0) && !(klen == 5 && memcmp(k, "value", 5) == 0))
            return addon_yaml_errorf(addon_yaml_key(n, i), err, errlen,
                                     "%s: unknown key (expected name or value)", what);
    }
    return 0;
}

/* A name goes into log lines: short, and only [A-Za-z0-9._-]; unique in the list. */
static int canary_name(const addon_yaml_node_t *n, const char *what, addon__repl_canaries_t *c,
                       char *err, size_t errlen)
{
    const char *s;
    size_t len;
    int rc = addon_yaml_get_string(n, what, &s, &len, err, errlen);
    if (rc != 0)
        return rc;
    int ok = len > 0 && len <= ADDON_REPLACEMENTS_CANARY_NAME_MAX;
    for (size_t i = 0; i < len && ok; i++) {
        char ch = s[i];
        ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
             ch == '.' || ch == '_' || ch == '-';
    }
    if (!ok)
        return addon_yaml_errorf(n, err, errlen, "%s: 1 to %d bytes of A-Z a-z 0-9 . _ -", what,
                                 ADDON_REPLACEMENTS_CANARY_NAME_MAX);
    for (size_t k = 0; k < c->n; k++) {
        if (c->names[k].len == len && memcmp(c->names[k].base, s, len) == 0)
            return addon_yaml_errorf(n, err, errlen, "%s: same name as canaries[%zu]", what, k);
    }
    return canary_dup(s, len, &c->names[c->n], err, errlen);
}

static int canary_one(const addon_yaml_node_t *item, size_t i, addon__repl_canaries_t *c, char *err,
                      size_t errlen)
{
    char what[ADDON__CANARY_WHAT_MAX], sub[ADDON__CANARY_WHAT_MAX + 8];
    snprintf(what, sizeof(what), "canaries[%zu]", i);
    int rc = addon_yaml_expect(item, ADDON_YAML_MAP, what, err, errlen);
    if (rc == 0)
        rc = canary_keys(item, what, err, errlen);
    if (rc != 0)
        return rc;
    const addon_yaml_node_t *name = addon_yaml_get(item, "name");
    const addon_yaml_node_t *value = addon_yaml_get(item, "value");
    if (name == NULL || value == NULL)
        return addon_yaml_errorf(item, err, errlen, "%s: missing required key '%s'", what,
                                 name == NULL ? "name" : "value");
    snprintf(sub, sizeof(sub), "%s.name", what);
    rc = canary_name(name, sub, c, err, errlen);
    if (rc != 0)
        return rc;
    snprintf(sub, sizeof(sub), "%s.value", what);
    const char *s;
    size_t len;
    rc = addon_yaml_get_string(value, sub, &s, &len, err, errlen);
    if (rc == 0 && (len == 0 || len > ADDON_REPLACEMENTS_MAX_STRING))
        rc = addon_yaml_errorf(value, err, errlen, "%s: empty or longer than %d bytes", sub,
                               ADDON_REPLACEMENTS_MAX_STRING);
    if (rc == 0)
        rc = canary_dup(s, len, &c->values[c->n], err, errlen);
    if (rc != 0) {
        free((char *)c->names[c->n].base); /* a name is not secret: no wipe needed */
        c->names[c->n].base = NULL;
        return rc;
    }
    c->n++;
    return 0;
}

int addon__repl_canaries_parse(const addon_yaml_node_t *n, addon__repl_canaries_t *c, char *err,
                               size_t errlen)
{
    size_t count = addon_yaml_count(n);
    c->present = 1;
    if (count > ADDON_REPLACEMENTS_MAX_ENTRIES) {
        addon_yaml_errorf(n, err, errlen, "canaries: more than %d", ADDON_REPLACEMENTS_MAX_ENTRIES);
        return PX_ETOOBIG;
    }
    c->names = calloc(count ? count : 1, sizeof(*c->names));
    c->values = calloc(count ? count : 1, sizeof(*c->values));
    if (c->names == NULL || c->values == NULL) {
        snprintf(err, errlen, "out of memory");
        return PX_ENOMEM;
    }
    for (size_t i = 0; i < count; i++) {
        int rc = canary_one(addon_yaml_item(n, i), i, c, err, errlen);
        if (rc != 0)
            return rc;
    }
    return 0;
}

void addon__repl_canaries_free(addon__repl_canaries_t *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free((char *)c->names[i].base);
        OPENSSL_cleanse((char *)c->values[i].base, c->values[i].len);
        free((char *)c->values[i].base);
    }
    free(c->names);
    free(c->values);
    memset(c, 0, sizeof(*c));
}
