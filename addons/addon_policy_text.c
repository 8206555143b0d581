/* The allowlist as text: the `airlock check` summary, `airlock explain` lines, the 403 message of
 * a block entry and `airlock check --print-effective`. */
#include <stdio.h>
#include <string.h>

#include "addons/addon_out.h"
#include "addons/addon_policy_int.h"

static const char *policy_kind_name(addon_policy_kind_t kind)
{
    return kind == ADDON_POLICY_DOMAINS  ? "domains"
           : kind == ADDON_POLICY_BLOCKS ? "block"
                                         : "url_prefixes";
}

static const addon__policy_entry_t *policy_entry(const addon_policy_t *p, addon_policy_kind_t k,
                                                 size_t i)
{
    const addon__policy_list_t *l = addon__policy_list(p, k);
    return l != NULL && i < l->n ? &l->v[i] : NULL;
}

static void out_host(addon_out_t *o, const addon__policy_entry_t *e)
{
    if (e->sub)
        addon_out_put(o, ".", 1);
    addon_out_esc(o, e->host);
}

static void out_yaml_str(addon_out_t *o, const char *s, size_t len);

/* A graphql block: ", graphql queries a,b mutations none ..." (yaml 0) or its YAML lines. */
static void out_graphql(addon_out_t *o, const addon_policy_graphql_t *g, int yaml)
{
    const char *names[] = {"queries", "mutations", "subscriptions"};
    const addon_str_t *lists[] = {g->queries, g->mutations, g->subscriptions};
    size_t counts[] = {g->nqueries, g->nmutations, g->nsubscriptions};
    addon_out_fmt(o, yaml ? "    graphql:\n" : ", graphql");
    for (size_t k = 0; k < 3; k++) {
        addon_out_fmt(o, yaml ? "      %s: [" : " %s ", names[k]);
        if (counts[k] == 0 && !yaml)
            addon_out_fmt(o, "none");
        for (size_t i = 0; i < counts[k]; i++) {
            addon_out_fmt(o, i == 0 ? "" : yaml ? ", " : ",");
            if (yaml)
                out_yaml_str(o, lists[k][i].base, lists[k][i].len);
            else
                addon_out_esc(o, lists[k][i]);
        }
        if (yaml)
            addon_out_fmt(o, "]\n");
    }
}

static void out_entry(addon_out_t *o, addon_policy_kind_t kind, const addon__policy_entry_t *e)
{
    if (kind == ADDON_POLICY_DOMAINS) {
        out_host(o, e);
        return;
    }
    addon_out_fmt(o, "host ");
    out_host(o, e);
    addon_out_fmt(o, ", path ");
    if (e->path.len == 0)
        addon_out_fmt(o, "any");
    else
        addon_out_esc(o, e->path);
    addon_out_fmt(o, ", methods ");
    if (e->nmethods == 0)
        addon_out_fmt(o, "any");
    for (size_t i = 0; i < e->nmethods; i++) {
        if (i > 0)
            addon_out_fmt(o, ",");
        addon_out_esc(o, e->methods[i]);
    }
    for (size_t i = 0; i < e->nports; i++)
        addon_out_fmt(o, "%s%u", i == 0 ? ", also ports " : ",", e->ports[i]);
    if (e->passthrough)
        addon_out_fmt(o, ", tls passthrough");
    if (e->graphql != NULL)
        out_graphql(o, e->graphql, 0);
}

static void out_list(addon_out_t *o, const addon_policy_t *p, addon_policy_kind_t kind)
{
    const addon__policy_list_t *l = addon__policy_list(p, kind);
    for (size_t i = 0; l != NULL && i < l->n; i++) {
        addon_out_fmt(o, "%s[%zu] ", policy_kind_name(kind), i);
        out_entry(o, kind, &l->v[i]);
        addon_out_fmt(o, "\n");
    }
}

size_t addon_policy_describe(const addon_policy_t *p, char *buf, size_t len)
{
    addon_out_t o = {buf, len, 0};
    if (len > 0)
        buf[0] = '\0';
    size_t nd = addon_policy_count(p, ADDON_POLICY_DOMAINS);
    size_t nu = addon_policy_count(p, ADDON_POLICY_URL_PREFIXES);
    size_t nb = addon_policy_count(p, ADDON_POLICY_BLOCKS);
    const char *name = p != NULL ? p->name : "<none>";
    addon_out_put(&o, name, strlen(name));
    addon_out_fmt(&o, ": %zu domains, %zu url_prefixes", nd, nu);
    if (nb > 0)
        addon_out_fmt(&o, ", %zu block entr%s", nb, nb == 1 ? "y" : "ies");
    if (p != NULL && p->format != ADDON_POLICY_FORMAT_NATIVE)
        addon_out_fmt(&o, " (read as %s)", addon_policy_format_name(p->format));
    addon_out_fmt(&o, "%s\n", nd + nu == 0 ? " (everything is blocked)" : "");
    out_list(&o, p, ADDON_POLICY_BLOCKS);
    out_list(&o, p, ADDON_POLICY_DOMAINS);
    out_list(&o, p, ADDON_POLICY_URL_PREFIXES);
    addon__policy_budgets_text(p, &o, 0);    /* addon_policy_budget.c */
    addon__policy_fetch_pass_text(p, &o, 0); /* addon_provider_pass.c */
    return o.pos;
}

size_t addon_policy_block_message(const addon_policy_t *p, size_t index, char *buf, size_t len)
{
    char what[300];
    addon_out_t o = {what, sizeof(what), 0};
    what[0] = '\0';
    const addon__policy_entry_t *e = policy_entry(p, ADDON_POLICY_BLOCKS, index);
    addon_out_fmt(&o, "block[%zu]", index);
    if (e != NULL) {
        addon_out_fmt(&o, " (");
        out_entry(&o, ADDON_POLICY_BLOCKS, e);
        if (e->src != NULL)
            addon_out_fmt(&o, "; written at %.120s", e->src);
        addon_out_fmt(&o, ")");
    }
    return (size_t)snprintf(buf, len, ADDON_POLICY_MSG_BLOCK_FMT, what);
}

/* A YAML double-quoted scalar: '"', '\\' and control bytes escaped; UTF-8 passes through (every
 * stored text came from a UTF-8 file). */
static void out_yaml_str_pre(addon_out_t *o, const char *pre, const char *s, size_t len)
{
    addon_out_put(o, "\"", 1);
    addon_out_put(o, pre, strlen(pre));
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            addon_out_fmt(o, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            addon_out_fmt(o, "\\x%02x", c);
        else
            addon_out_put(o, (const char *)&s[i], 1);
    }
    addon_out_put(o, "\"", 1);
}

static void out_yaml_str(addon_out_t *o, const char *s, size_t len)
{
    out_yaml_str_pre(o, "", s, len);
}

static void out_yaml_host(addon_out_t *o, const addon__policy_entry_t *e)
{
    out_yaml_str_pre(o, e->sub ? "." : "", e->host.base, e->host.len);
}

static void out_yaml_src(addon_out_t *o, const addon__policy_entry_t *e)
{
    if (e->src == NULL)
        return;
    addon_out_fmt(o, "  # ");
    addon_out_esc(o, (addon_str_t){e->src, strlen(e->src)});
}

/* A mapping entry of block or url_prefixes, two spaces in. */
static void out_yaml_map(addon_out_t *o, const addon__policy_entry_t *e)
{
    addon_out_fmt(o, "  - host: ");
    out_yaml_host(o, e);
    out_yaml_src(o, e);
    addon_out_fmt(o, "\n");
    if (e->path.len > 0) {
        addon_out_fmt(o, "    path: ");
        out_yaml_str(o, e->path.base, e->path.len);
        addon_out_fmt(o, "\n");
    }
    if (e->nmethods > 0) {
        addon_out_fmt(o, "    methods: [");
        for (size_t i = 0; i < e->nmethods; i++) {
            if (i > 0)
                addon_out_fmt(o, ", ");
            out_yaml_str(o, e->methods[i].base, e->methods[i].len);
        }
        addon_out_fmt(o, "]\n");
    }
    if (e->nports > 0) {
        addon_out_fmt(o, "    ports: [");
        for (size_t i = 0; i < e->nports; i++)
            addon_out_fmt(o, "%s%u", i > 0 ? ", " : "", e->ports[i]);
        addon_out_fmt(o, "]\n");
    }
    if (e->passthrough)
        addon_out_fmt(o, "    tls: passthrough\n");
    if (e->warn)
        addon_out_fmt(o, "    mode: warn\n");
    if (e->graphql != NULL)
        out_graphql(o, e->graphql, 1);
}

size_t addon_policy_print_effective(const addon_policy_t *p, char *buf, size_t len)
{
    addon_out_t o = {buf, len, 0};
    if (len > 0)
        buf[0] = '\0';
    const char *name = p != NULL ? p->name : "<none>";
    addon_out_fmt(&o, "# effective allowlist of ");
    addon_out_esc(&o, (addon_str_t){name, strlen(name)});
    addon_out_fmt(&o, " (read as %s)\n", addon_policy_format_name(addon_policy_format_of(p)));
    if (addon_policy_format_of(p) == ADDON_POLICY_FORMAT_AGENTBOX)
        addon_out_fmt(&o, "# agentbox dry run: the final allowlist, (defaults + allow_hosts + "
                          "allow_file) - block_hosts\n");
    addon_out_fmt(&o, "# airlock's own format: it loads unchanged with --allowlist. Blocks are "
                      "checked first and win.\n");
    if (p != NULL && p->warn)
        addon_out_fmt(&o, "mode: warn  # what this allowlist would block goes on, logged WARN\n");
    static const addon_policy_kind_t kinds[] = {ADDON_POLICY_BLOCKS, ADDON_POLICY_DOMAINS,
                                                ADDON_POLICY_URL_PREFIXES};
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        const addon__policy_list_t *l = addon__policy_list(p, kinds[k]);
        size_t n = l != NULL ? l->n : 0;
        addon_out_fmt(&o, "%s:%s\n", policy_kind_name(kinds[k]), n == 0 ? " []" : "");
        for (size_t i = 0; i < n; i++) {
            const addon__policy_entry_t *e = &l->v[i];
            if (kinds[k] != ADDON_POLICY_DOMAINS) {
                out_yaml_map(&o, e);
                continue;
            }
            addon_out_fmt(&o, "  - ");
            out_yaml_host(&o, e);
            out_yaml_src(&o, e);
            addon_out_fmt(&o, "\n");
        }
    }
    if (addon_policy_count(p, ADDON_POLICY_DOMAINS) +
            addon_policy_count(p, ADDON_POLICY_URL_PREFIXES) ==
        0)
        addon_out_fmt(&o, "# no allow entries: every request is blocked (no outbound traffic)\n");
    addon__policy_budgets_text(p, &o, 1);
    addon__policy_fetch_pass_text(p, &o, 1);
    if (p != NULL && p->nremoved > 0) {
        addon_out_fmt(&o, "# removed from the list by block entries:\n");
        for (size_t i = 0; i < p->nremoved; i++) {
            const addon__policy_removed_t *r = &p->removed[i];
            const addon__policy_entry_t *b = policy_entry(p, ADDON_POLICY_BLOCKS, r->block);
            addon_out_fmt(&o, "#   ");
            addon_out_esc(&o, (addon_str_t){r->text, strlen(r->text)});
            addon_out_fmt(&o, " (");
            addon_out_esc(&o, (addon_str_t){r->src, strlen(r->src)});
            addon_out_fmt(&o, ") removed by block[%zu]", r->block);
            if (b != NULL) {
                addon_out_fmt(&o, " ");
                out_host(&o, b);
                if (b->src != NULL) {
                    addon_out_fmt(&o, " (");
                    addon_out_esc(&o, (addon_str_t){b->src, strlen(b->src)});
                    addon_out_fmt(&o, ")");
                }
            }
            addon_out_fmt(&o, "\n");
        }
    }
    return o.pos;
}

const char *addon_policy_precheck_name(addon_policy_precheck_t c)
{
    switch (c) {
    case ADDON_POLICY_PRECHECK_NONE:
        return "none";
    case ADDON_POLICY_PRECHECK_NUL:
        return "path contains NUL";
    case ADDON_POLICY_PRECHECK_BACKSLASH:
        return "path contains a backslash";
    case ADDON_POLICY_PRECHECK_DOT_SEGMENT:
        return "path has a .. segment";
    case ADDON_POLICY_PRECHECK_TOO_LONG:
        return "path is too long";
    }
    return "unknown";
}

const char *addon_policy_reading_name(unsigned how)
{
    static const char *const names[] = {
        "as sent",
        "';parameters' removed",
        "'.' segments removed",
        "';parameters' and '.' segments removed",
        "slashes merged",
        "';parameters' removed and slashes merged",
        "'.' segments removed and slashes merged",
        "';parameters' and '.' segments removed and slashes merged",
    };
    return names[how & 7];
}

size_t addon_policy_explain(const addon_policy_t *p, const addon_policy_query_t *q,
                            const addon_policy_decision_t *d, char *buf, size_t len)
{
    addon_out_t o = {buf, len, 0};
    if (len > 0)
        buf[0] = '\0';
    const addon__policy_entry_t *e = policy_entry(p, d->kind, d->index);
    const char *kind = policy_kind_name(d->kind);
    if (d->allowed && e != NULL) {
        addon_out_fmt(&o, "allowed by %s[%zu] (", kind, d->index);
        out_entry(&o, d->kind, e);
        addon_out_fmt(&o, ")");
        return o.pos;
    }
    switch (e != NULL ? d->verdict : ADDON_POLICY_BLOCK_HOST) {
    case ADDON_POLICY_BLOCK_LISTED:
        addon_out_fmt(&o, "blocked by block[%zu] (", d->index);
        out_entry(&o, ADDON_POLICY_BLOCKS, e);
        if (e->src != NULL) {
            addon_out_fmt(&o, "; ");
            addon_out_esc(&o, (addon_str_t){e->src, strlen(e->src)});
        }
        addon_out_fmt(&o, ")");
        break;
    case ADDON_POLICY_BLOCK_METHOD:
        addon_out_fmt(&o, "blocked: method ");
        addon_out_esc(&o, q->method);
        addon_out_fmt(&o, " not allowed (%s[%zu] matches host and path)", kind, d->index);
        break;
    case ADDON_POLICY_BLOCK_PORT:
        addon_out_fmt(&o, "blocked: port %u not allowed (%s[%zu] matches host%s)", q->port, kind,
                      d->index, d->kind == ADDON_POLICY_URL_PREFIXES ? " and path" : "");
        break;
    case ADDON_POLICY_BLOCK_PATH:
        addon_out_fmt(&o, "blocked: no entry matches path ");
        addon_out_esc(&o, q->path);
        addon_out_fmt(&o, " (%s[%zu] matches host ", kind, d->index);
        addon_out_esc(&o, q->host);
        addon_out_fmt(&o, ")");
        break;
    default:
        if (d->verdict == ADDON_POLICY_BLOCK_PRECHECK) {
            addon_out_fmt(&o, "blocked: pre-check: %s", addon_policy_precheck_name(d->precheck));
            break;
        }
        addon_out_fmt(&o, "blocked: no entry matches host ");
        addon_out_esc(&o, q->host);
        if (addon_policy_count(p, ADDON_POLICY_DOMAINS) +
                addon_policy_count(p, ADDON_POLICY_URL_PREFIXES) ==
            0)
            addon_out_fmt(&o, " (the allowlist is empty)");
        break;
    }
    if (d->reading != 0)
        addon_out_fmt(&o, " (on a reading of the path a server may make: %s)",
                      addon_policy_reading_name(d->reading));
    return o.pos;
}
