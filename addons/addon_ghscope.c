/* GraphQL repository scoping (addon_ghscope.h): the targets of a request body, each checked
 * against the installation's repositories; the first refusal ends the walk. */
#include "addons/addon_ghscope.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addons/addon_ghnodeid.h"
#include "addons/addon_gqlreq.h"
#include "addons/addon_graphql_parse.h"
#include "base/px_err.h"

#define GHS_STR_MAX 512  /* bytes of a decoded owner, name or ID */
#define GHS_DEPTH_MAX 64 /* values within values: document lists, then a variable's JSON */

enum { GHS_POS_ID = 0, GHS_POS_NWO };

typedef struct ghs {
    const addon_gql_doc_t *doc;
    const json_t *vars; /* the "variables" object, or NULL */
    const addon_ghrepos_t *repos;
    size_t *vardefs; /* the variable definitions' nodes */
    size_t nvardefs;
    char *detail;
    size_t dlen;
    int verdict;
    size_t ntargets;
    size_t work;
} ghs_t;

/* A value: a JSON one (j), or the document's node n when j is NULL. */
typedef struct ghv {
    const json_t *j;
    size_t n;
} ghv_t;

static const addon_gql_node_t *ghs_node(const ghs_t *g, size_t i)
{
    return addon_gql_node(g->doc, i);
}

static int ghs_is_value(const addon_gql_node_t *n)
{
    return n->kind >= ADDON_GQL_N_INT;
}

static int ghs_eq(const char *k, size_t len, const char *w)
{
    return strlen(w) == len && memcmp(k, w, len) == 0;
}

static int ghs_ends(const char *k, size_t len, const char *w)
{
    size_t n = strlen(w);
    return len > n && memcmp(k + len - n, w, n) == 0;
}

/* Where node IDs go: id, ids, ...Id, ...Ids; clientMutationId is a free string (Relay). */
static int ghs_id_key(const char *k, size_t len)
{
    if (ghs_eq(k, len, "id") || ghs_eq(k, len, "ids"))
        return 1;
    return !ghs_eq(k, len, "clientMutationId") &&
           (ghs_ends(k, len, "Id") || ghs_ends(k, len, "Ids"));
}

static int ghs_nwo_key(const char *k, size_t len)
{
    return ghs_eq(k, len, "nameWithOwner") || ghs_ends(k, len, "NameWithOwner");
}

/* Refuses with detail what + s (printable, capped) + why. The first refusal stays. */
static void ghs_block(ghs_t *g, int verdict, const char *what, const char *s, size_t len,
                      const char *why)
{
    if (g->verdict != ADDON_GHSCOPE_PASS)
        return;
    g->verdict = verdict;
    int n = snprintf(g->detail, g->dlen, "%s", what);
    size_t o = n > 0 ? (size_t)n : 0;
    size_t keep = len > 100 ? 100 : len;
    for (size_t i = 0; i < keep && o + 1 < g->dlen; i++) {
        unsigned char c = (unsigned char)s[i];
        g->detail[o++] = c > 0x20 && c < 0x7f && !strchr("\"\\[]", c) ? (char)c : '?';
    }
    g->detail[o < g->dlen ? o : g->dlen - 1] = '\0';
    snprintf(g->detail + strlen(g->detail), g->dlen - strlen(g->detail), "%s%s",
             len > keep ? "..." : "", why);
}

/* A string token (with its quotes) decoded to UTF-8 in out: its length, or -1 (a block string,
 * a NUL, longer than cap). The lexer has checked every escape. */
static long ghs_gql_string(addon_str_t t, char *out, size_t cap)
{
    if (t.len < 2 || (t.len >= 3 && memcmp(t.base, "\"\"\"", 3) == 0))
        return -1;
    const char *s = t.base + 1;
    size_t n = t.len - 2, o = 0;
    for (size_t i = 0; i < n;) {
        if (o + 4 > cap)
            return -1;
        if (s[i] != '\\') {
            out[o++] = s[i++];
            continue;
        }
        char e = s[i + 1];
        const char *map = strchr("\"\"\\\\//b\bf\fn\nr\rt\t", e);
        if (e != 'u' && map != NULL) {
            out[o++] = map[1];
            i += 2;
            continue;
        }
        unsigned long v = 0;
        i += 2;
        int brace = s[i] == '{';
        size_t k = i + (size_t)brace;
        for (; k < n && (brace ? s[k] != '}' : k < i + 4); k++)
            v = v * 16 + (unsigned long)(s[k] <= '9' ? s[k] - '0' : (s[k] | 0x20) - 'a' + 10);
        i = k + (size_t)brace;
        if (v >= 0xD800 && v <= 0xDBFF && i + 6 <= n) { /* a pair: the lexer checked the low half */
            unsigned long lo = 0;
            for (size_t j = i + 2; j < i + 6; j++)
                lo = lo * 16 + (unsigned long)(s[j] <= '9' ? s[j] - '0' : (s[j] | 0x20) - 'a' + 10);
            v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
            i += 6;
        }
        if (v == 0)
            return -1;
        if (v < 0x80) {
            out[o++] = (char)v;
        } else if (v < 0x800) {
            out[o++] = (char)(0xC0 | (v >> 6));
            out[o++] = (char)(0x80 | (v & 0x3F));
        } else if (v < 0x10000) {
            out[o++] = (char)(0xE0 | (v >> 12));
            out[o++] = (char)(0x80 | ((v >> 6) & 0x3F));
            out[o++] = (char)(0x80 | (v & 0x3F));
        } else {
            out[o++] = (char)(0xF0 | (v >> 18));
            out[o++] = (char)(0x80 | ((v >> 12) & 0x3F));
            out[o++] = (char)(0x80 | ((v >> 6) & 0x3F));
            out[o++] = (char)(0x80 | (v & 0x3F));
        }
    }
    return (long)o;
}

/* Node j lies under node i: nodes are in document order and a subtree is contiguous, so this
 * is a bound check (walking j's parents instead cost the nesting depth at every step, which
 * made a list nested 60 deep cost 60 x 60 steps per item). */
static int ghs_under(const ghs_t *g, size_t j, size_t i)
{
    return j > i && j < ghs_node(g, i)->end;
}

/* The default value of variable definition i (the parser records it right after the
 * definition, before the definition's directives), or ADDON_GQL_NONE. */
static size_t ghs_default(const ghs_t *g, size_t i)
{
    const addon_gql_node_t *c = ghs_node(g, i + 1);
    return c != NULL && c->parent == i && ghs_is_value(c) && c->key.len == 0 ? i + 1
                                                                             : ADDON_GQL_NONE;
}

/* Node j is an argument (or inside one) of field i: arguments come right after their field,
 * before the field's selection set, and hold no field. */
static int ghs_in_args(const ghs_t *g, size_t j, size_t i)
{
    const addon_gql_node_t *n = ghs_node(g, j);
    return n != NULL && n->kind != ADDON_GQL_N_FIELD && ghs_under(g, j, i);
}

/* What variable name stands for: its JSON value (1), a default value node in *dflt (2, the one
 * default of that name: two different definitions with defaults are refused, -1), or null (0). */
static int ghs_var(ghs_t *g, addon_str_t name, const json_t **j, size_t *dflt)
{
    char key[GHS_STR_MAX];
    if (name.len >= sizeof(key))
        return -1;
    memcpy(key, name.base, name.len);
    key[name.len] = '\0';
    *j = g->vars != NULL ? json_object_get(g->vars, key) : NULL;
    if (*j != NULL)
        return 1;
    int found = 0;
    g->work += g->nvardefs; /* charged: many references to many definitions stay bounded */
    for (size_t k = 0; k < g->nvardefs && g->work <= ADDON_GHSCOPE_WORK_MAX; k++) {
        size_t i = g->vardefs[k];
        const addon_gql_node_t *n = ghs_node(g, i);
        if (n->key.len != name.len || memcmp(n->key.base, name.base, name.len) != 0)
            continue;
        size_t d = ghs_default(g, i);
        if (d == ADDON_GQL_NONE)
            continue;
        if (found)
            return -1;
        *dflt = d;
        found = 2;
    }
    if (g->work > ADDON_GHSCOPE_WORK_MAX) {
        ghs_block(g, ADDON_GHSCOPE_UNREADABLE, "<too-complex>", "", 0, "");
        return -1;
    }
    return found;
}

/* The one string v stands for, decoded into out: its length; -2 for null (or a variable neither
 * given nor defaulted); -1 for anything else. */
static long ghs_string(ghs_t *g, ghv_t v, char *out, size_t cap, int depth)
{
    if (depth > GHS_DEPTH_MAX)
        return -1;
    if (v.j != NULL) {
        if (json_is_null(v.j))
            return -2;
        if (!json_is_string(v.j) || json_string_length(v.j) >= cap)
            return -1;
        memcpy(out, json_string_value(v.j), json_string_length(v.j));
        return (long)json_string_length(v.j);
    }
    const addon_gql_node_t *n = ghs_node(g, v.n);
    if (n->kind == ADDON_GQL_N_STRING)
        return ghs_gql_string(n->text, out, cap);
    if (n->kind == ADDON_GQL_N_NAME && ghs_eq(n->text.base, n->text.len, "null"))
        return -2;
    if (n->kind != ADDON_GQL_N_VAR)
        return -1;
    const json_t *j = NULL;
    size_t d = ADDON_GQL_NONE;
    int r = ghs_var(g, n->text, &j, &d);
    if (r <= 0)
        return r == 0 ? -2 : -1;
    return ghs_string(g, r == 1 ? (ghv_t){j, 0} : (ghv_t){NULL, d}, out, cap, depth + 1);
}

/* One target string s[0..len) at a position of kind pos. */
static void ghs_target(ghs_t *g, int pos, const char *s, size_t len)
{
    g->ntargets++;
    if (pos == GHS_POS_NWO) {
        const char *sl = memchr(s, '/', len);
        if (sl == NULL || sl == s || sl == s + len - 1 ||
            memchr(sl + 1, '/', len - (size_t)(sl - s) - 1))
            ghs_block(g, ADDON_GHSCOPE_OUTSIDE, "repository:", s, len, " (not owner/name)");
        else if (!addon_ghrepos_has_name(g->repos, s, (size_t)(sl - s), sl + 1,
                                         len - (size_t)(sl - s) - 1))
            ghs_block(g, ADDON_GHSCOPE_OUTSIDE, "repository:", s, len, "");
        return;
    }
    if (addon_ghrepos_has_node(g->repos, s, len))
        return;
    addon_ghnode_t n;
    if (addon_ghnodeid_decode(s, len, &n) != 0)
        ghs_block(g, ADDON_GHSCOPE_OUTSIDE, "node-id:", s, len, " (undecodable)");
    else if (n.kind == ADDON_GHNODE_OTHER)
        ghs_block(g, ADDON_GHSCOPE_OUTSIDE, "node-id:", s, len, " (not tied to a repository)");
    else if (!addon_ghrepos_has_id(g->repos, n.repo_id))
        ghs_block(g, ADDON_GHSCOPE_OUTSIDE, "node-id:", s, len,
                  " (repository outside the installation)");
}

static int ghs_busy(ghs_t *g, int depth)
{
    if (g->verdict != ADDON_GHSCOPE_PASS)
        return 1;
    if (depth > GHS_DEPTH_MAX) {
        ghs_block(g, ADDON_GHSCOPE_UNREADABLE, "<too-deep>", "", 0, "");
        return 1;
    }
    if (++g->work > ADDON_GHSCOPE_WORK_MAX) {
        ghs_block(g, ADDON_GHSCOPE_UNREADABLE, "<too-complex>", "", 0, "");
        return 1;
    }
    return 0;
}

/* Every target value v stands for (a string, a list of them, a variable); null is none. */
static void ghs_values(ghs_t *g, int pos, ghv_t v, addon_str_t key, int depth)
{
    if (ghs_busy(g, depth))
        return;
    if (v.j != NULL && json_is_array(v.j)) {
        for (size_t i = 0; i < json_array_size(v.j); i++)
            ghs_values(g, pos, (ghv_t){json_array_get(v.j, i), 0}, key, depth + 1);
        return;
    }
    if (v.j == NULL && ghs_node(g, v.n)->kind == ADDON_GQL_N_LIST) {
        /* the items only, each item's own subtree skipped: every node is looked at once */
        for (size_t j = v.n + 1; j < ghs_node(g, v.n)->end; j = ghs_node(g, j)->end)
            ghs_values(g, pos, (ghv_t){NULL, j}, key, depth + 1);
        return;
    }
    if (v.j == NULL && ghs_node(g, v.n)->kind == ADDON_GQL_N_VAR) {
        const json_t *j = NULL;
        size_t d = ADDON_GQL_NONE;
        int r = ghs_var(g, ghs_node(g, v.n)->text, &j, &d);
        if (r < 0)
            ghs_block(g, ADDON_GHSCOPE_OUTSIDE, "argument:", key.base, key.len,
                      " (a variable with two defaults)");
        else if (r > 0)
            ghs_values(g, pos, r == 1 ? (ghv_t){j, 0} : (ghv_t){NULL, d}, key, depth + 1);
        return;
    }
    char s[GHS_STR_MAX];
    long len = ghs_string(g, v, s, sizeof(s), depth);
    if (len == -2)
        return; /* null: no target */
    if (len <= 0)
        ghs_block(g, ADDON_GHSCOPE_OUTSIDE, "argument:", key.base, key.len,
                  " (not a string that names a repository or node)");
    else
        ghs_target(g, pos, s, (size_t)len);
}

/* The owner of repository(name:) without owner: the login of the field around it when that is
 * repositoryOwner, user or organization. Its length in out, or -1. */
static long ghs_chain_owner(ghs_t *g, size_t field, char *out, size_t cap)
{
    size_t up = ghs_node(g, field)->parent;
    if (up == ADDON_GQL_NONE)
        return -1;
    const addon_gql_node_t *f = ghs_node(g, up);
    if (!ghs_eq(f->key.base, f->key.len, "repositoryOwner") &&
        !ghs_eq(f->key.base, f->key.len, "user") &&
        !ghs_eq(f->key.base, f->key.len, "organization"))
        return -1;
    size_t login = ADDON_GQL_NONE;
    /* the arguments of up, each one's subtree skipped; read again for every repository field
     * under up, so the steps are charged to the work cap */
    for (size_t j = up + 1; j < field && ghs_in_args(g, j, up); j = ghs_node(g, j)->end) {
        if (++g->work > ADDON_GHSCOPE_WORK_MAX) {
            ghs_block(g, ADDON_GHSCOPE_UNREADABLE, "<too-complex>", "", 0, "");
            return -1;
        }
        const addon_gql_node_t *a = ghs_node(g, j);
        if (a->parent == up && ghs_is_value(a) && ghs_eq(a->key.base, a->key.len, "login")) {
            if (login != ADDON_GQL_NONE)
                return -1; /* twice (or also in a directive): which one counts is not ours */
            login = j;
        }
    }
    return login != ADDON_GQL_NONE ? ghs_string(g, (ghv_t){NULL, login}, out, cap, 0) : -1;
}

/* repository(owner:, name:) at field node i. */
static void ghs_repository(ghs_t *g, size_t i)
{
    size_t owner = ADDON_GQL_NONE, name = ADDON_GQL_NONE;
    int twice = 0;
    for (size_t j = i + 1; ghs_in_args(g, j, i); j = ghs_node(g, j)->end) {
        const addon_gql_node_t *a = ghs_node(g, j);
        if (a->parent != i || !ghs_is_value(a))
            continue;
        size_t *slot = ghs_eq(a->key.base, a->key.len, "owner")  ? &owner
                       : ghs_eq(a->key.base, a->key.len, "name") ? &name
                                                                 : NULL;
        if (slot != NULL) {
            twice |= *slot != ADDON_GQL_NONE;
            *slot = j;
        }
    }
    if (owner == ADDON_GQL_NONE && name == ADDON_GQL_NONE)
        return; /* a repository field of an object (issue { repository }): no new target */
    char o[GHS_STR_MAX], nm[GHS_STR_MAX];
    g->ntargets++;
    if (twice) { /* a duplicate argument, or one in a directive: which one counts is not ours */
        ghs_block(g, ADDON_GHSCOPE_OUTSIDE, "repository:", "?", 1, " (an argument given twice)");
        return;
    }
    long nl = name != ADDON_GQL_NONE ? ghs_string(g, (ghv_t){NULL, name}, nm, sizeof(nm), 0) : -1;
    if (nl <= 0) {
        ghs_block(g, ADDON_GHSCOPE_OUTSIDE, "repository:", "?", 1, " (no readable name)");
        return;
    }
    long ol = owner != ADDON_GQL_NONE ? ghs_string(g, (ghv_t){NULL, owner}, o, sizeof(o), 0)
                                      : ghs_chain_owner(g, i, o, sizeof(o));
    if (ol <= 0) {
        ghs_block(g, ADDON_GHSCOPE_OUTSIDE, "repository:?/", nm, (size_t)nl,
                  " (no readable owner)");
        return;
    }
    if (!addon_ghrepos_has_name(g->repos, o, (size_t)ol, nm, (size_t)nl)) {
        char full[2 * GHS_STR_MAX + 1];
        int fl = snprintf(full, sizeof(full), "%.*s/%.*s", (int)ol, o, (int)nl, nm);
        ghs_block(g, ADDON_GHSCOPE_OUTSIDE, "repository:", full, fl > 0 ? (size_t)fl : 0, "");
    }
}

static void ghs_doc(ghs_t *g)
{
    for (size_t i = 0; i < addon_gql_node_count(g->doc) && g->verdict == ADDON_GHSCOPE_PASS; i++) {
        const addon_gql_node_t *n = ghs_node(g, i);
        if (n->kind == ADDON_GQL_N_FIELD && ghs_eq(n->key.base, n->key.len, "repository"))
            ghs_repository(g, i);
        else if (ghs_is_value(n) && ghs_id_key(n->key.base, n->key.len))
            ghs_values(g, GHS_POS_ID, (ghv_t){NULL, i}, n->key, 0);
        else if (ghs_is_value(n) && ghs_nwo_key(n->key.base, n->key.len))
            ghs_values(g, GHS_POS_NWO, (ghv_t){NULL, i}, n->key, 0);
    }
}

/* Every key of the variables that names a target, at any depth. */
static void ghs_json(ghs_t *g, const json_t *j, int depth)
{
    if (ghs_busy(g, depth))
        return;
    if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++)
            ghs_json(g, json_array_get(j, i), depth + 1);
        return;
    }
    if (!json_is_object(j))
        return;
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)j, k, v)
    {
        addon_str_t key = {k, strlen(k)};
        if (ghs_id_key(k, key.len))
            ghs_values(g, GHS_POS_ID, (ghv_t){v, 0}, key, depth + 1);
        else if (ghs_nwo_key(k, key.len))
            ghs_values(g, GHS_POS_NWO, (ghv_t){v, 0}, key, depth + 1);
        ghs_json(g, v, depth + 1);
    }
}

/* The variable definitions' nodes into g->vardefs. 0 or PX_ENOMEM. */
static int ghs_vardefs(ghs_t *g)
{
    size_t n = addon_gql_node_count(g->doc), count = 0;
    for (size_t i = 0; i < n; i++)
        count += ghs_node(g, i)->kind == ADDON_GQL_N_VARDEF;
    if (count == 0)
        return 0;
    g->vardefs = malloc(count * sizeof(*g->vardefs));
    if (g->vardefs == NULL)
        return PX_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (ghs_node(g, i)->kind == ADDON_GQL_N_VARDEF)
            g->vardefs[g->nvardefs++] = i;
    }
    return 0;
}

static int ghs_unreadable(char *detail, size_t dlen, const char *why)
{
    snprintf(detail, dlen, "%s", why);
    return ADDON_GHSCOPE_UNREADABLE;
}

int addon_ghscope_check(const char *body, size_t len, const addon_ghrepos_t *repos, char *detail,
                        size_t dlen, size_t *ntargets)
{
    *ntargets = 0;
    detail[0] = '\0';
    if (len > ADDON_GHSCOPE_BODY_CAP)
        return ghs_unreadable(detail, dlen, "<too-large>");
    json_t *o = NULL;
    const char *why = NULL;
    int lr = addon_gqlreq_load(body, len, 0, &o, &why);
    if (lr == PX_ENOMEM)
        return PX_ENOMEM;
    if (lr != 0 || !json_is_object(o)) {
        int batched = json_is_array(o);
        json_decref(o);
        return ghs_unreadable(detail, dlen,
                              lr != 0   ? why
                              : batched ? "<batched>"
                                        : "<unparseable>");
    }
    const json_t *q = json_object_get(o, "query");
    const json_t *vars = json_object_get(o, "variables");
    if (vars != NULL && json_is_null(vars))
        vars = NULL;
    int rc = ADDON_GHSCOPE_UNREADABLE;
    addon_gql_doc_t *doc = NULL;
    char err[128];
    if (!json_is_string(q)) {
        snprintf(detail, dlen, "<unparseable>");
    } else if (vars != NULL && !json_is_object(vars)) {
        snprintf(detail, dlen, "<invalid-variables>");
    } else {
        rc = addon_gql_parse_nodes(json_string_value(q), json_string_length(q), &doc, err,
                                   sizeof(err));
        if (rc == PX_ENOMEM) {
            json_decref(o);
            return PX_ENOMEM;
        }
        if (rc != 0) {
            snprintf(detail, dlen, "<unparseable>");
            rc = ADDON_GHSCOPE_UNREADABLE;
        } else {
            ghs_t g = {.doc = doc, .vars = vars, .repos = repos, .detail = detail, .dlen = dlen};
            rc = ghs_vardefs(&g);
            if (rc == 0) {
                ghs_doc(&g);
                if (g.verdict == ADDON_GHSCOPE_PASS && vars != NULL)
                    ghs_json(&g, vars, 0);
                rc = g.verdict;
                *ntargets = g.ntargets;
            }
            free(g.vardefs);
        }
    }
    addon_gql_free(doc);
    json_decref(o);
    return rc;
}
