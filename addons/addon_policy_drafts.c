/* Approval drafts merged into an allowlist (addon_policy.h, addon_policy_merge_drafts): the
 * entries `airlock approve --scope persist` wrote to the drafts file (docs/approvals.md) join
 * the allowlist's own, after them, each keeping where it was written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addons/addon_policy_int.h"
#include "base/px_err.h"

/* A copy of s (len bytes) as an addon_str_t, NUL-ended; -1 when out of memory. */
static int drafts_dup(addon_str_t s, addon_str_t *out)
{
    out->base = NULL;
    out->len = s.len;
    if (s.base == NULL)
        return 0;
    char *d = malloc(s.len + 1);
    if (d == NULL)
        return -1;
    memcpy(d, s.base, s.len);
    d[s.len] = '\0';
    out->base = d;
    return 0;
}

/* Copies allow entry s into the new entry d (zeroed); 0 or PX_ENOMEM (d is freed by the
 * caller's policy either way). */
static int drafts_copy(addon__policy_entry_t *d, const addon__policy_entry_t *s)
{
    d->host_glob = s->host_glob;
    d->path_glob = s->path_glob;
    d->sub = s->sub;
    d->passthrough = s->passthrough;
    if (drafts_dup(s->host, &d->host) != 0 || drafts_dup(s->path, &d->path) != 0)
        return PX_ENOMEM;
    if (s->nmethods > 0) {
        d->methods = calloc(s->nmethods, sizeof(*d->methods));
        if (d->methods == NULL)
            return PX_ENOMEM;
        for (size_t i = 0; i < s->nmethods; i++, d->nmethods++)
            if (drafts_dup(s->methods[i], &d->methods[i]) != 0)
                return PX_ENOMEM;
    }
    if (s->nports > 0) {
        d->ports = malloc(s->nports * sizeof(*d->ports));
        if (d->ports == NULL)
            return PX_ENOMEM;
        memcpy(d->ports, s->ports, s->nports * sizeof(*d->ports));
        d->nports = s->nports;
    }
    if (s->src != NULL && addon__policy_set_src(d, s->src) != 0)
        return PX_ENOMEM;
    return 0;
}

int addon_policy_drafts_check(const addon_policy_t *drafts, char *err, size_t errlen)
{
    /* a drafts file only ever adds what a person approved: a key that changes how the whole
     * allowlist decides (a mode, a hold, a block, a budget) has no place there */
    const char *what = drafts->warn               ? "mode"
                       : drafts->hold_seconds > 0 ? "on_block"
                       : drafts->blocks.n > 0     ? "block"
                       : drafts->nbudgets > 0     ? "budgets"
                       : drafts->nfetch_pass > 0  ? "provider_fetch_pass"
                       : drafts->ngraphql > 0     ? "graphql"
                                                  : NULL;
    if (what == NULL)
        return 0;
    if (err != NULL && errlen > 0)
        snprintf(err, errlen,
                 "%s: %s is not allowed in a drafts file (only domains and "
                 "url_prefixes)",
                 drafts->name, what);
    return PX_ECONFIG;
}

int addon_policy_merge_drafts(addon_policy_t *p, const addon_policy_t *drafts)
{
    static const addon_policy_kind_t kinds[] = {ADDON_POLICY_DOMAINS, ADDON_POLICY_URL_PREFIXES};
    for (size_t k = 0; k < 2; k++) {
        const addon__policy_list_t *l = addon__policy_list(drafts, kinds[k]);
        for (size_t i = 0; l != NULL && i < l->n; i++) {
            int rc;
            addon__policy_entry_t *e = addon__policy_push(p, kinds[k], &rc);
            if (e == NULL)
                return rc;
            if ((rc = drafts_copy(e, &l->v[i])) != 0)
                return rc;
        }
    }
    return 0;
}
