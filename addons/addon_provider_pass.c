/* The allowlist's provider_fetch_pass: block types and top-level request fields that airlock
 * does not know and that the operator lets through although they carry a URL (a provider's
 * new feature that airlock has not learnt yet). Read with the native allowlist, freed and
 * printed with it (addon_policy_int.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addons/addon_out.h"
#include "addons/addon_policy_int.h"
#include "addons/addon_provider_int.h"
#include "addons/addon_yaml.h"
#include "base/px_err.h"

static int pass_name_ok(const char *s, size_t len)
{
    if (len == 0 || len > ADDON_PROVIDER_NAME_MAX)
        return 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              c == '_' || c == '-' || c == '.'))
            return 0;
    }
    return 1;
}

int addon__policy_fetch_pass_yaml(addon_policy_t *p, const addon_yaml_node_t *n, char *err,
                                  size_t errlen)
{
    if (addon_yaml_type(n) == ADDON_YAML_NULL)
        return 0;
    int rc = addon_yaml_expect(n, ADDON_YAML_SEQ, "provider_fetch_pass", err, errlen);
    if (rc != 0)
        return rc;
    size_t count = addon_yaml_count(n);
    if (count > ADDON_PROVIDER_PASS_MAX)
        return addon_yaml_errorf(n, err, errlen, "provider_fetch_pass: more than %d names",
                                 ADDON_PROVIDER_PASS_MAX);
    p->fetch_pass = calloc(count + 1, sizeof(*p->fetch_pass));
    if (p->fetch_pass == NULL) {
        snprintf(err, errlen, "out of memory");
        return PX_ENOMEM;
    }
    for (size_t i = 0; i < count; i++) {
        const addon_yaml_node_t *item = addon_yaml_item(n, i);
        char what[48];
        snprintf(what, sizeof(what), "provider_fetch_pass[%zu]", i);
        const char *s;
        size_t len;
        rc = addon_yaml_get_string(item, what, &s, &len, err, errlen);
        if (rc != 0)
            return rc;
        if (!pass_name_ok(s, len))
            return addon_yaml_errorf(item, err, errlen,
                                     "%s: a block type or field name: 1 to %d letters, digits, "
                                     "'_', '-' or '.'",
                                     what, ADDON_PROVIDER_NAME_MAX);
        if (addon__provider_known(s, len))
            return addon_yaml_errorf(item, err, errlen,
                                     "%s: '%.*s' is one airlock knows and checks; "
                                     "provider_fetch_pass only lets through what it does not know",
                                     what, (int)len, s);
        p->fetch_pass[i] = malloc(len + 1);
        if (p->fetch_pass[i] == NULL) {
            snprintf(err, errlen, "out of memory");
            return PX_ENOMEM;
        }
        memcpy(p->fetch_pass[i], s, len);
        p->fetch_pass[i][len] = '\0';
        p->nfetch_pass = i + 1;
    }
    return 0;
}

void addon__policy_fetch_pass_free(addon_policy_t *p)
{
    for (size_t i = 0; i < p->nfetch_pass; i++)
        free(p->fetch_pass[i]);
    free(p->fetch_pass);
    p->fetch_pass = NULL;
    p->nfetch_pass = 0;
}

void addon__policy_fetch_pass_text(const addon_policy_t *p, addon_out_t *o, int yaml)
{
    if (p == NULL || p->nfetch_pass == 0)
        return;
    addon_out_fmt(o, yaml ? "provider_fetch_pass:\n" : "provider_fetch_pass:");
    for (size_t i = 0; i < p->nfetch_pass; i++) {
        /* names hold only letters, digits, '_', '-' and '.': no quoting needed */
        addon_out_fmt(o, yaml ? "  - \"" : " ");
        addon_out_put(o, p->fetch_pass[i], strlen(p->fetch_pass[i]));
        addon_out_fmt(o, yaml ? "\"\n" : "");
    }
    if (!yaml)
        addon_out_fmt(o, "\n");
}

int addon__provider_pass(const addon_policy_t *p, const char *name, size_t len)
{
    if (p == NULL)
        return 0;
    for (size_t i = 0; i < p->nfetch_pass; i++) {
        if (strlen(p->fetch_pass[i]) == len && memcmp(p->fetch_pass[i], name, len) == 0)
            return 1;
    }
    return 0;
}
