/* The replacement map's accessors and its describe text (`airlock check`): read-only views of
 * what addon_replacements.c loaded. */
#include "addons/addon_replacements.h"
#include "addons/addon_replacements_int.h"

#include <string.h>

#include "addons/addon_ghapp.h"
#include "addons/addon_glob.h"
#include "addons/addon_out.h"
#include "base/px_err.h"

#define ADDON__REPL_SHORT 4 /* surrogate bytes shown by describe */

/* ---- accessors -------------------------------------------------------------------------- */

static const addon__repl_entry_t *repl_at(const addon_replacements_t *r, size_t i)
{
    return r != NULL && i < r->n ? &r->entries[i] : NULL;
}

static const addon_str_t repl_none = {NULL, 0};

const char *addon_replacements_name(const addon_replacements_t *r)
{
    return r != NULL ? r->name : "<none>";
}

size_t addon_replacements_count(const addon_replacements_t *r)
{
    return r != NULL ? r->n : 0;
}

addon_replacements_kind_t addon_replacements_kind(const addon_replacements_t *r, size_t i)
{
    const addon__repl_entry_t *e = repl_at(r, i);
    return e != NULL ? e->kind : ADDON_REPLACEMENTS_NONE;
}

addon_str_t addon_replacements_surrogate(const addon_replacements_t *r, size_t i)
{
    const addon__repl_entry_t *e = repl_at(r, i);
    return e != NULL ? e->surrogate : repl_none;
}

addon_str_t addon_replacements_value(const addon_replacements_t *r, size_t i)
{
    const addon__repl_entry_t *e = repl_at(r, i);
    return e != NULL && e->kind == ADDON_REPLACEMENTS_MASKED ? e->value : repl_none;
}

int addon_replacements_allow_plain_http(const addon_replacements_t *r, size_t i)
{
    const addon__repl_entry_t *e = repl_at(r, i);
    return e != NULL && e->allow_plain_http;
}

int addon_replacements_allow_foreign(const addon_replacements_t *r, size_t i)
{
    const addon__repl_entry_t *e = repl_at(r, i);
    return e != NULL && e->allow_foreign;
}

size_t addon_replacements_scope_count(const addon_replacements_t *r, size_t i)
{
    const addon__repl_entry_t *e = repl_at(r, i);
    return e != NULL ? e->nscopes : 0;
}

addon_str_t addon_replacements_scope(const addon_replacements_t *r, size_t i, size_t k)
{
    const addon__repl_entry_t *e = repl_at(r, i);
    return e != NULL && k < e->nscopes ? e->scopes[k] : repl_none;
}

size_t addon_replacements_header_count(const addon_replacements_t *r, size_t i)
{
    const addon__repl_entry_t *e = repl_at(r, i);
    return e != NULL ? e->nheaders : 0;
}

addon_str_t addon_replacements_header(const addon_replacements_t *r, size_t i, size_t k, int *exact)
{
    const addon__repl_entry_t *e = repl_at(r, i);
    if (e == NULL || k >= e->nheaders) {
        if (exact != NULL)
            *exact = 0;
        return repl_none;
    }
    if (exact != NULL)
        *exact = e->exact[k];
    return e->headers[k];
}

int addon_replacements_in_scope(const addon_replacements_t *r, size_t i, addon_str_t host)
{
    const addon__repl_entry_t *e = repl_at(r, i);
    if (e == NULL || host.base == NULL)
        return 0;
    if (host.len > 0 && host.base[host.len - 1] == '.')
        host.len--;
    if (host.len >= 2 && host.base[0] == '[' && host.base[host.len - 1] == ']') {
        host.base++;
        host.len -= 2;
    }
    for (size_t k = 0; k < e->nscopes; k++) {
        if (addon_glob_match_icase(e->scopes[k].base, e->scopes[k].len, host.base, host.len))
            return 1;
    }
    return 0;
}

int addon_replacements_aws(const addon_replacements_t *r, size_t i, addon_replacements_aws_t *out)
{
    const addon__repl_entry_t *e = repl_at(r, i);
    memset(out, 0, sizeof(*out));
    if (e == NULL || e->kind != ADDON_REPLACEMENTS_AWS_SIGV4)
        return PX_ENOENT;
    out->surrogate_key_id = e->surrogate;
    out->access_key_id = e->akid;
    out->secret_access_key = e->secret;
    out->session_token = e->token;
    out->surrogate_session_token = e->surrogate_token;
    return 0;
}

size_t addon_replacements_canary_count(const addon_replacements_t *r)
{
    return r != NULL ? r->canaries.n : 0;
}

addon_str_t addon_replacements_canary_name(const addon_replacements_t *r, size_t i)
{
    return r != NULL && i < r->canaries.n ? r->canaries.names[i] : repl_none;
}

addon_str_t addon_replacements_canary_value(const addon_replacements_t *r, size_t i)
{
    return r != NULL && i < r->canaries.n ? r->canaries.values[i] : repl_none;
}

struct addon_ghapp *addon_replacements_ghapp(const addon_replacements_t *r, size_t i)
{
    const addon__repl_entry_t *e = repl_at(r, i);
    return e != NULL ? e->ghapp : NULL;
}

int addon_replacements_find_aws(const addon_replacements_t *r, addon_str_t akid)
{
    for (size_t i = 0; r != NULL && i < r->n; i++) {
        const addon__repl_entry_t *e = &r->entries[i];
        if (e->kind == ADDON_REPLACEMENTS_AWS_SIGV4 && e->surrogate.len == akid.len &&
            (akid.len == 0 || memcmp(e->surrogate.base, akid.base, akid.len) == 0))
            return (int)i;
    }
    return -1;
}

/* ---- describe --------------------------------------------------------------------------- */

/* A surrogate is not secret, but it is shown shortened: its first few bytes, "…", its length.
 * A short one shows at most half of itself. */
static void out_surrogate(addon_out_t *o, addon_str_t s)
{
    size_t shown = s.len / 2 < ADDON__REPL_SHORT ? s.len / 2 : ADDON__REPL_SHORT;
    addon_str_t head = {s.base, shown};
    addon_out_esc(o, head);
    addon_out_fmt(o, "\xe2\x80\xa6(%zu)", s.len);
}

static void out_list(addon_out_t *o, const char *label, const addon_str_t *v, size_t n)
{
    addon_out_fmt(o, " %s [", label);
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            addon_out_fmt(o, ", ");
        addon_out_esc(o, v[i]);
    }
    addon_out_fmt(o, "]");
}

size_t addon_replacements_describe(const addon_replacements_t *r, char *buf, size_t len)
{
    addon_out_t o = {buf, len, 0};
    if (len > 0)
        buf[0] = '\0';
    size_t n = addon_replacements_count(r);
    size_t nmasked = 0, nghapp = 0;
    for (size_t i = 0; i < n; i++) {
        nmasked += r->entries[i].kind == ADDON_REPLACEMENTS_MASKED;
        nghapp += r->entries[i].kind == ADDON_REPLACEMENTS_GITHUB_APP;
    }
    const char *name = addon_replacements_name(r);
    addon_out_put(&o, name, strlen(name));
    addon_out_fmt(&o, ": %zu replacement%s (%zu masked, %zu aws-sigv4", n, n == 1 ? "" : "s",
                  nmasked, n - nmasked - nghapp);
    if (nghapp > 0)
        addon_out_fmt(&o, ", %zu github-app", nghapp);
    addon_out_fmt(&o, ")%s\n", n == 0 ? " (nothing is masked)" : "");
    for (size_t i = 0; i < n; i++) {
        const addon__repl_entry_t *e = &r->entries[i];
        addon_out_fmt(&o, "entry[%zu] ", i);
        out_surrogate(&o, e->surrogate);
        if (e->kind == ADDON_REPLACEMENTS_MASKED) {
            addon_out_fmt(&o, " masked");
            out_list(&o, "scopes", e->scopes, e->nscopes);
            out_list(&o, "headers", e->headers, e->nheaders);
            if (e->allow_foreign)
                addon_out_fmt(&o, " allow_foreign_credentials");
            if (e->allow_plain_http)
                addon_out_fmt(&o, " allow_plain_http");
            if (e->from.base != NULL) {
                addon_out_fmt(&o, " value_from ");
                addon_out_esc(&o, e->from);
            }
        } else if (e->kind == ADDON_REPLACEMENTS_GITHUB_APP) {
            addon_out_fmt(&o, " github-app app_id %s installation_id %s token_url https://%s:%u",
                          addon_ghapp_app_id(e->ghapp), addon_ghapp_installation_id(e->ghapp),
                          addon_ghapp_host(e->ghapp), (unsigned)addon_ghapp_port(e->ghapp));
            addon_out_fmt(&o, "%s", addon_ghapp_token_path(e->ghapp));
            out_list(&o, "scopes", e->scopes, e->nscopes);
            if (e->allow_foreign)
                addon_out_fmt(&o, " allow_foreign_credentials");
            if (addon_ghapp_timeout(e->ghapp) != ADDON_GHAPP_TIMEOUT_DEFAULT)
                addon_out_fmt(&o, " timeout %us", addon_ghapp_timeout(e->ghapp));
        } else {
            addon_out_fmt(&o, " aws-sigv4");
            out_list(&o, "scopes", e->scopes, e->nscopes);
            if (e->token.base != NULL)
                addon_out_fmt(&o, " session_token");
            if (e->surrogate_token.base != NULL)
                addon_out_fmt(&o, " surrogate_session_token");
        }
        if (e->nscopes == 0)
            addon_out_fmt(&o, " (no scopes: never applies)");
        addon_out_fmt(&o, "\n");
    }
    for (size_t i = 0; i < addon_replacements_canary_count(r); i++) {
        addon_out_fmt(&o, i == 0 ? "canaries: " : ", ");
        addon_out_esc(&o, r->canaries.names[i]);
        addon_out_fmt(&o, i + 1 == r->canaries.n ? "\n" : "");
    }
    /* An earlier surrogate inside a later one is replaced first and hides the later one. */
    for (size_t j = 0; j < n; j++) {
        const addon_str_t *later = &r->entries[j].surrogate;
        for (size_t i = 0; i < j; i++) {
            const addon_str_t *earlier = &r->entries[i].surrogate;
            if (r->entries[i].kind != ADDON_REPLACEMENTS_MASKED ||
                r->entries[j].kind != ADDON_REPLACEMENTS_MASKED)
                continue;
            if (earlier->len <= later->len &&
                memmem(later->base, later->len, earlier->base, earlier->len) != NULL)
                addon_out_fmt(
                    &o,
                    "note: entry[%zu]'s surrogate contains entry[%zu]'s, which is applied "
                    "first (file order); list the longer surrogate first\n",
                    j, i);
        }
    }
    return o.pos;
}
