/* agentbox's .agentbox/config.toml [network] section as an airlock policy:
 *
 *   effective = (defaults ∪ allow_hosts ∪ allow_file) − block_hosts
 *
 * mode must be "allowlist" (or absent). allow_hosts items are host strings or
 * {host = "...", ports = [...]} (ports map to airlock's `ports`: a url_prefixes entry with that
 * host and any path). allow_file is a domain list (addon_domainlist.c) relative to the config
 * file's directory unless absolute; it is re-read whenever the config is (SIGHUP). block_hosts
 * are globs: an entry they name is taken out of the list (and remembered for
 * --print-effective), and each also stays as an airlock block entry, so that a host under a
 * broader allow entry ("*.example.com" vs block "evil.example.com") is refused too. An empty
 * effective list blocks every request. The TOML itself is read by addon_agentbox_toml.cpp. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addons/addon_agentbox_int.h"
#include "addons/addon_policy_int.h"
#include "addons/addon_yaml.h"
#include "base/px_err.h"

/* The hosts every agentbox session may reach unless a block_hosts glob removes them: the
 * default allowlist of agentbox's network spec, in its order (the OpenAI and Anthropic APIs and
 * the OpenAI sign-in hosts the Codex CLI uses). */
static const char *const agentbox_defaults[] = {
    "api.openai.com",  "platform.openai.com", "chatgpt.com",
    "chat.openai.com", "auth.openai.com",     "api.anthropic.com",
};

static int ab_error(char *err, size_t errlen, const char *name, addon__ab_pos_t pos, int rc,
                    const char *fmt, const char *a, const char *b)
{
    int n = snprintf(err, errlen, "%s:%u:%u: ", name, pos.line, pos.col);
    if (n >= 0 && (size_t)n < errlen)
        snprintf(err + n, errlen - (size_t)n, fmt, a, b);
    return rc;
}

/* Adds one allow or block entry for host h; src is where it came from. */
static int ab_add(addon_policy_t *p, addon_policy_kind_t kind, const char *host, size_t len,
                  const uint16_t *ports, size_t nports, const char *src, const char *what,
                  const char *name, addon__ab_pos_t pos, char *err, size_t errlen)
{
    if (kind == ADDON_POLICY_DOMAINS && nports > 0)
        kind = ADDON_POLICY_URL_PREFIXES;
    int rc;
    addon__policy_entry_t *e = addon__policy_push(p, kind, &rc);
    if (e == NULL)
        return ab_error(err, errlen, name, pos, rc, "%s: %s", what,
                        rc == PX_ETOOBIG ? "too many entries" : "out of memory");
    const char *why = NULL;
    rc = addon__policy_host(host, len, e, &why);
    if (rc == 0 && nports > 0) {
        e->ports = malloc(nports * sizeof(*e->ports));
        rc = e->ports == NULL ? PX_ENOMEM : 0;
        why = "out of memory";
        if (rc == 0) {
            memcpy(e->ports, ports, nports * sizeof(*e->ports));
            e->nports = nports;
        }
    }
    if (rc == 0) {
        rc = addon__policy_set_src(e, src);
        why = "out of memory";
    }
    if (rc != 0)
        return ab_error(err, errlen, name, pos, rc, "%s: %s", what, why);
    return 0;
}

/* Takes out of kind's list every entry a block entry names, noting what removed it. */
static int ab_remove_blocked(addon_policy_t *p, addon_policy_kind_t kind)
{
    addon__policy_list_t *l = kind == ADDON_POLICY_DOMAINS ? &p->domains : &p->urls;
    size_t kept = 0;
    for (size_t i = 0; i < l->n; i++) {
        addon__policy_entry_t *e = &l->v[i];
        size_t b = 0;
        while (b < p->blocks.n && !addon__policy_block_names(&p->blocks.v[b], e))
            b++;
        if (b == p->blocks.n) {
            l->v[kept++] = *e;
            continue;
        }
        size_t tlen = e->host.len + 2;
        char *text = malloc(tlen);
        int rc = text == NULL ? PX_ENOMEM : 0;
        if (rc == 0) {
            addon__policy_host_text(e, text, tlen);
            rc = addon__policy_note_removed(p, text, strlen(text), e->src, b);
            free(text);
        }
        if (rc != 0) {
            /* Keep the list whole so the policy frees cleanly; the caller fails the load. */
            memmove(&l->v[kept], &l->v[i], (l->n - i) * sizeof(*l->v));
            l->n = kept + (l->n - i);
            return rc;
        }
        addon__policy_entry_free(e);
    }
    l->n = kept;
    return 0;
}

static int ab_cmp(const void *a, const void *b, void *ctx)
{
    const addon__policy_entry_t *v = ctx;
    const addon__policy_entry_t *x = &v[*(const size_t *)a];
    const addon__policy_entry_t *y = &v[*(const size_t *)b];
    if (x->sub != y->sub)
        return x->sub - y->sub;
    if (x->host.len != y->host.len)
        return x->host.len < y->host.len ? -1 : 1;
    int c = memcmp(x->host.base, y->host.base, x->host.len);
    if (c != 0)
        return c;
    return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/* The union: a host written twice (a default also in allow_hosts, ...) stays once, where it was
 * first written, its source naming every place ("default; config.toml:7 (allow_hosts)"). */
static int ab_dedupe(addon_policy_t *p)
{
    addon__policy_list_t *l = &p->domains;
    if (l->n < 2)
        return 0;
    size_t *ix = malloc(l->n * sizeof(*ix));
    char *drop = calloc(l->n, 1);
    if (ix == NULL || drop == NULL) {
        free(ix);
        free(drop);
        return PX_ENOMEM;
    }
    for (size_t i = 0; i < l->n; i++)
        ix[i] = i;
    qsort_r(ix, l->n, sizeof(*ix), ab_cmp, l->v);
    int rc = 0;
    for (size_t k = 1; k < l->n && rc == 0; k++) {
        addon__policy_entry_t *first = &l->v[ix[k - 1]];
        addon__policy_entry_t *e = &l->v[ix[k]];
        if (e->sub != first->sub || e->host.len != first->host.len ||
            memcmp(e->host.base, first->host.base, e->host.len) != 0)
            continue;
        /* ix[k-1] is the earliest of its run: merge into it and let the run continue from it */
        size_t n = strlen(first->src) + strlen(e->src) + 3;
        char *src = malloc(n);
        if (src == NULL) {
            rc = PX_ENOMEM;
            break;
        }
        snprintf(src, n, "%s; %s", first->src, e->src);
        free(first->src);
        first->src = src;
        drop[ix[k]] = 1;
        ix[k] = ix[k - 1];
    }
    size_t kept = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (drop[i])
            addon__policy_entry_free(&l->v[i]);
        else
            l->v[kept++] = l->v[i];
    }
    l->n = kept;
    free(ix);
    free(drop);
    return rc;
}

/* allow_file's path: as written when absolute, else beside the config file. */
static char *ab_allow_file_path(const char *config, const char *file)
{
    const char *slash = strrchr(config, '/');
    size_t dir = file[0] == '/' || slash == NULL ? 0 : (size_t)(slash - config) + 1;
    size_t len = strlen(file);
    char *path = malloc(dir + len + 1);
    if (path == NULL)
        return NULL;
    memcpy(path, config, dir);
    memcpy(path + dir, file, len + 1);
    return path;
}

static int ab_allow_file(addon_policy_t *p, const char *name, const addon__ab_net_t *net, char *err,
                         size_t errlen)
{
    char *path = ab_allow_file_path(name, net->allow_file);
    if (path == NULL)
        return ab_error(err, errlen, name, net->allow_file_pos, PX_ENOMEM, "%s%s",
                        "network.allow_file: out of memory", "");
    char *data = NULL;
    size_t len = 0;
    char why[ADDON__POLICY_SRC_MAX];
    int rc = addon_yaml_read_file(path, &data, &len, why, sizeof(why));
    if (rc != 0) {
        /* A missing allow_file is an error, not an empty list: the operator named it. */
        ab_error(err, errlen, name, net->allow_file_pos, rc == PX_ENOENT ? PX_ECONFIG : rc,
                 "network.allow_file: %s%s", why, "");
        free(path);
        return rc == PX_ENOENT ? PX_ECONFIG : rc;
    }
    rc = addon__domainlist_read(p, path, data, len, "allow_file", err, errlen);
    free(data);
    free(path);
    return rc;
}

/* The budgets of the [airlock] table, through the builder every format shares. */
static int ab_budgets(addon_policy_t *p, const char *name, const addon__ab_net_t *net, char *err,
                      size_t errlen)
{
    static const char *const kinds[] = {"requests", "sent", "received", "rate"};
    char what[ADDON__POLICY_WHAT_MAX], sub[ADDON__POLICY_WHAT_MAX + 16];
    char src[ADDON__POLICY_SRC_MAX], msg[ADDON__POLICY_SRC_MAX + 128];
    for (size_t i = 0; i < net->nbudgets; i++) {
        const addon__ab_budget_t *b = &net->budgets[i];
        snprintf(what, sizeof(what), "airlock.budgets[%zu]", i);
        if (b->host == NULL)
            return ab_error(err, errlen, name, b->pos, PX_ECONFIG, "%s: %s", what,
                            "missing required key 'host' (a host pattern, or all)");
        snprintf(src, sizeof(src), "%s:%u", name, b->pos.line);
        int added = 0;
        for (int k = 0; k < 4; k++) {
            if (b->val[k] == NULL)
                continue;
            int at;
            int rc = addon__policy_budget_add(p, k, b->host, strlen(b->host), b->val[k],
                                              strlen(b->val[k]), src, msg, sizeof(msg), &at);
            if (rc != 0) {
                snprintf(sub, sizeof(sub), "%s.%s", what,
                         at == ADDON__BUDGET_AT_HOST ? "host" : kinds[k]);
                return ab_error(err, errlen, name,
                                at == ADDON__BUDGET_AT_HOST    ? b->host_pos
                                : at == ADDON__BUDGET_AT_VALUE ? b->val_pos[k]
                                                               : b->pos,
                                rc, "%s: %s", sub, msg);
            }
            added++;
        }
        if (added == 0)
            return ab_error(err, errlen, name, b->pos, PX_ECONFIG, "%s: %s", what,
                            "sets no limit (give requests, sent, received and/or rate)");
    }
    return 0;
}

static int ab_build(addon_policy_t *p, const char *name, const addon__ab_net_t *net, int read_files,
                    char *err, size_t errlen)
{
    if (net->mode != NULL && strcmp(net->mode, "allowlist") != 0)
        return ab_error(err, errlen, name, net->mode_pos, PX_ECONFIG,
                        "network.mode: '%.64s' is not supported by airlock, which enforces an "
                        "allowlist (write mode = \"allowlist\")%s",
                        net->mode, "");
    char src[ADDON__POLICY_SRC_MAX];
    char what[ADDON__POLICY_WHAT_MAX];
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < net->nblock; i++) {
        const addon__ab_host_t *h = &net->block[i];
        snprintf(src, sizeof(src), "%s:%u (block_hosts)", name, h->pos.line);
        snprintf(what, sizeof(what), "network.block_hosts[%zu]", i);
        rc = ab_add(p, ADDON_POLICY_BLOCKS, h->host, h->len, NULL, 0, src, what, name, h->pos, err,
                    errlen);
    }
    for (size_t i = 0; rc == 0 && i < sizeof(agentbox_defaults) / sizeof(agentbox_defaults[0]); i++)
        rc = ab_add(p, ADDON_POLICY_DOMAINS, agentbox_defaults[i], strlen(agentbox_defaults[i]),
                    NULL, 0, "default", "default", name, net->table, err, errlen);
    for (size_t i = 0; rc == 0 && i < net->nallow; i++) {
        const addon__ab_host_t *h = &net->allow[i];
        snprintf(src, sizeof(src), "%s:%u (allow_hosts)", name, h->pos.line);
        snprintf(what, sizeof(what), "network.allow_hosts[%zu]", i);
        rc = ab_add(p, ADDON_POLICY_DOMAINS, h->host, h->len, h->ports, h->nports, src, what, name,
                    h->pos, err, errlen);
    }
    if (rc == 0 && net->allow_file != NULL && read_files)
        rc = ab_allow_file(p, name, net, err, errlen);
    if (rc == 0)
        rc = ab_dedupe(p);
    if (rc == 0)
        rc = ab_remove_blocked(p, ADDON_POLICY_DOMAINS);
    if (rc == 0)
        rc = ab_remove_blocked(p, ADDON_POLICY_URL_PREFIXES);
    if (rc == 0)
        rc = ab_budgets(p, name, net, err, errlen);
    if (rc == PX_ENOMEM && err[0] == '\0')
        snprintf(err, errlen, "%s: out of memory", name);
    return rc;
}

int addon__agentbox_read(addon_policy_t *p, const char *name, const char *data, size_t len,
                         int read_files, char *err, size_t errlen)
{
    addon__ab_net_t net;
    int rc = addon__ab_toml_read(name, data, len, &net, err, errlen);
    if (rc == 0)
        rc = ab_build(p, name, &net, read_files, err, errlen);
    addon__ab_net_free(&net);
    return rc;
}
