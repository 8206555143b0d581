#include "proxy/px_policy.h"

#include <stdlib.h>

#include "addons/addon_allowlist.h"
#include "addons/addon_aws.h"
#include "addons/addon_graphql.h"
#include "addons/addon_leak.h"
#include "addons/addon_scrub.h"
#include "addons/addon_masking.h"
#include "addons/addon_policy.h"
#include "addons/addon_replacements.h"
#include "addons/addon_provider.h"
#include "addons/addon_tooldomains.h"
#include "base/px_err.h"
#include "proxy/px_drafts.h"
#include "proxy/px_log.h"

int px_snapshot_load(const px_config_t *cfg, int startup, px_snapshot_t **out)
{
    char err[1024];
    const char *why = startup ? "" : " (reload failed; keeping the previous configuration)";
    addon_policy_t *p = NULL;
    addon_replacements_t *r = NULL;
    int rc = addon_policy_load_file_as(
        cfg->allowlist_path, (addon_policy_format_t)cfg->allowlist_format, &p, err, sizeof(err));
    if (rc == PX_ENOENT && startup) {
        px_diag(PX_DIAG_ERROR, "allowlist not found: %s; all requests will be blocked",
                cfg->allowlist_path);
        p = addon_policy_new_empty(cfg->allowlist_path);
        if (p == NULL)
            return PX_ENOMEM;
    } else if (rc == PX_ENOENT) {
        px_diag(PX_DIAG_ERROR, "allowlist %s not found%s", cfg->allowlist_path, why);
        return rc;
    } else if (rc != 0) {
        px_diag(PX_DIAG_ERROR, "%s%s", err, why);
        return rc;
    }
    /* the approvals drafts beside the allowlist (px_drafts.h): a drafts file that does not load
     * is left out, said once; the allowlist alone then decides (it allows no more) */
    if (px_drafts_merge(p, cfg->allowlist_path, err, sizeof(err)) != 0)
        px_diag(PX_DIAG_ERROR, "%s: the approvals drafts are ignored", err);
    rc = addon_replacements_load_file(cfg->replacements_path, &r, err, sizeof(err));
    if (rc == PX_ENOENT) {
        if (startup)
            px_diag(PX_DIAG_INFO, "no replacements file at %s: credential masking is off",
                    cfg->replacements_path);
        r = NULL;
    } else if (rc != 0) {
        px_diag(PX_DIAG_ERROR, "%s%s", err, why);
        addon_policy_unref(p);
        return rc;
    }
    addon_leak_t *leak = NULL;
    if (r != NULL) {
        char warn[2048] = "";
        size_t nwarn = 0;
        rc = addon_leak_from_replacements(r, &leak, warn, sizeof(warn), &nwarn);
        if (rc != 0) {
            px_diag(PX_DIAG_ERROR, "%s: cannot build the secret guard: %s%s",
                    cfg->replacements_path, px_strerror(rc), why);
            addon_policy_unref(p);
            addon_replacements_unref(r);
            return rc;
        }
        if (nwarn > 0)
            px_diag(PX_DIAG_WARN, "%s: %s", cfg->replacements_path, warn);
        if (addon_leak_pattern_count(leak) == 0) {
            addon_leak_free(leak);
            leak = NULL;
        }
    }
    /* the response scrubber over the same values (its short-value warnings are the guard's) */
    addon_scrub_t *scrub = NULL;
    if (r != NULL && !cfg->scrub_off &&
        (rc = addon_scrub_from_replacements(r, &scrub, NULL, 0, NULL)) != 0) {
        px_diag(PX_DIAG_ERROR, "%s: cannot build the response scrubber: %s%s",
                cfg->replacements_path, px_strerror(rc), why);
        addon_policy_unref(p);
        addon_replacements_unref(r);
        addon_leak_free(leak);
        return rc;
    }
    if (scrub != NULL && addon_scrub_pattern_count(scrub) == 0) {
        addon_scrub_free(scrub);
        scrub = NULL;
    }
    int same_length = 1; /* a scrubbed body keeps its Content-Length only then */
    for (size_t i = 0; scrub != NULL && i < addon_scrub_pattern_count(scrub); i++) {
        addon_str_t repl;
        addon_str_t pat = addon_scrub_pattern(scrub, i, &repl, NULL, NULL);
        if (pat.len != repl.len)
            same_length = 0;
    }
    px_snapshot_t *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        addon_policy_unref(p);
        if (r != NULL)
            addon_replacements_unref(r);
        addon_leak_free(leak);
        addon_scrub_free(scrub);
        return PX_ENOMEM;
    }
    s->refs = 1;
    s->cfg.policy = p;
    s->cfg.replacements = r;
    s->leak = leak;
    s->scrub = scrub;
    s->scrub_same_length = same_length;
    *out = s;
    return 0;
}

px_snapshot_t *px_snapshot_ref(px_snapshot_t *s)
{
    __atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED); /* loops share a snapshot (--workers) */
    return s;
}

void px_snapshot_unref(px_snapshot_t *s)
{
    if (s == NULL || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) > 0)
        return;
    addon_policy_unref(s->cfg.policy);
    if (s->cfg.replacements != NULL)
        addon_replacements_unref(s->cfg.replacements);
    addon_leak_free(s->leak);
    addon_scrub_free(s->scrub);
    free(s);
}

const addon_t *const *px_policy_addons(void)
{
    static const addon_t *list[5];
    if (list[0] == NULL) {
        /* the allowlist first; then the request-body filters (GraphQL operations, then the
         * Anthropic tool-domain trim: each sees the previous one's output) */
        list[0] = addon_allowlist();
        list[1] = addon_graphql();
        list[2] = addon_tooldomains();
        list[3] = addon_provider(); /* the OpenAI endpoints' provider-fetch check */
        list[4] = NULL;
    }
    return list;
}

const addon_t *const *px_addons(void)
{
    static const addon_t *list[7];
    if (list[0] == NULL) {
        /* the policy addons, then exactly one credential mechanism: AWS re-signing, else
         * masking (the pipeline's stages run them: proxy/px_stage.h) */
        list[0] = addon_allowlist();
        list[1] = addon_graphql();
        list[2] = addon_tooldomains();
        list[3] = addon_provider(); /* the OpenAI endpoints' provider-fetch check */
        list[4] = addon_aws();
        list[5] = addon_masking();
        list[6] = NULL;
    }
    return list;
}
