/* The allow entries' host patterns, for the per-conversation CA (addon_policy_hosts.h). */
#include <stdio.h>
#include <string.h>

#include "addons/addon_policy_hosts.h"
#include "addons/addon_policy_int.h"

#define ADDON__POLICY_HOST_TEXT_MAX 1024 /* a host pattern as written (a glob may be long) */

int addon_policy_each_host(const addon_policy_t *p, addon_policy_host_cb cb, void *arg)
{
    static const addon_policy_kind_t kinds[] = {ADDON_POLICY_DOMAINS, ADDON_POLICY_URL_PREFIXES};
    static const char *const names[] = {"domains", "url_prefixes"};

    for (size_t k = 0; p != NULL && k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        const addon__policy_list_t *l = addon__policy_list(p, kinds[k]);
        for (size_t i = 0; l != NULL && i < l->n; i++) {
            const addon__policy_entry_t *e = &l->v[i];
            char text[ADDON__POLICY_HOST_TEXT_MAX];
            char where[ADDON__POLICY_WHAT_MAX + ADDON__POLICY_SRC_MAX];
            addon__policy_host_text(e, text, sizeof(text));
            if (e->src != NULL)
                snprintf(where, sizeof(where), "%s[%zu] (%s)", names[k], i, e->src);
            else
                snprintf(where, sizeof(where), "%s[%zu]", names[k], i);
            int rc = cb(arg, text, strlen(text), where);
            if (rc != 0)
                return rc;
        }
    }
    return 0;
}
