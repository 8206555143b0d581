/* The installation's repositories (addon_ghrepos.h). A few thousand entries at most, looked up a
 * few times per GraphQL request: a plain array is enough. */
#include "addons/addon_ghrepos.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/px_err.h"

#define GHREPOS_NAME_MAX 256
#define GHREPOS_MAX (ADDON_GHREPOS_PER_PAGE * ADDON_GHREPOS_MAX_PAGES)

typedef struct ghrepo {
    uint64_t id;
    char *node_id;
    char *full_name;
} ghrepo_t;

struct addon_ghrepos {
    ghrepo_t *v;
    size_t n, cap;
};

addon_ghrepos_t *addon_ghrepos_new(void)
{
    return calloc(1, sizeof(addon_ghrepos_t));
}

void addon_ghrepos_free(addon_ghrepos_t *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i].node_id);
        free(s->v[i].full_name);
    }
    free(s->v);
    free(s);
}

int addon_ghrepos_add(addon_ghrepos_t *s, uint64_t id, const char *node_id, const char *full_name)
{
    if (s->n == GHREPOS_MAX)
        return PX_ETOOBIG;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        ghrepo_t *v = realloc(s->v, cap * sizeof(*v));
        if (v == NULL)
            return PX_ENOMEM;
        s->v = v;
        s->cap = cap;
    }
    ghrepo_t *r = &s->v[s->n];
    r->id = id;
    r->node_id = strdup(node_id);
    r->full_name = strdup(full_name);
    if (r->node_id == NULL || r->full_name == NULL) {
        free(r->node_id);
        free(r->full_name);
        return PX_ENOMEM;
    }
    s->n++;
    return 0;
}

/* One element of "repositories": 0 when it was added, else PX_EPARSE/PX_ENOMEM. */
static int ghrepos_one(addon_ghrepos_t *s, const json_t *r)
{
    const json_t *id = json_object_get(r, "id");
    const json_t *node = json_object_get(r, "node_id");
    const json_t *name = json_object_get(r, "full_name");
    if (!json_is_integer(id) || json_integer_value(id) <= 0 || !json_is_string(node) ||
        !json_is_string(name) || json_string_length(node) == 0 ||
        json_string_length(name) > GHREPOS_NAME_MAX || json_string_length(node) > 256)
        return PX_EPARSE;
    const char *fn = json_string_value(name);
    const char *slash = strchr(fn, '/');
    if (slash == NULL || slash == fn || slash[1] == '\0' || strchr(slash + 1, '/') != NULL ||
        strlen(fn) != json_string_length(name))
        return PX_EPARSE;
    return addon_ghrepos_add(s, (uint64_t)json_integer_value(id), json_string_value(node), fn);
}

int addon_ghrepos_page(addon_ghrepos_t *s, const char *body, size_t len, size_t *got,
                       uint64_t *total, const char **why)
{
    json_error_t jerr;
    json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    int rc = PX_EPARSE;
    *why = "the repositories answer is not a JSON object";
    if (o == NULL || !json_is_object(o))
        goto out;
    const json_t *tc = json_object_get(o, "total_count");
    const json_t *list = json_object_get(o, "repositories");
    *why = "the repositories answer has no total_count or repositories array";
    if (!json_is_integer(tc) || json_integer_value(tc) < 0 || !json_is_array(list))
        goto out;
    *why = "a repository without a valid id, node_id or full_name";
    for (size_t i = 0; i < json_array_size(list); i++) {
        rc = ghrepos_one(s, json_array_get(list, i));
        if (rc != 0) {
            if (rc == PX_ENOMEM || rc == PX_ETOOBIG)
                *why = rc == PX_ENOMEM ? "out of memory" : "more repositories than airlock keeps";
            goto out;
        }
    }
    *got = json_array_size(list);
    *total = (uint64_t)json_integer_value(tc);
    *why = NULL;
    rc = 0;
out:
    json_decref(o);
    return rc;
}

size_t addon_ghrepos_count(const addon_ghrepos_t *s)
{
    return s != NULL ? s->n : 0;
}

int addon_ghrepos_has_id(const addon_ghrepos_t *s, uint64_t id)
{
    for (size_t i = 0; s != NULL && i < s->n; i++) {
        if (s->v[i].id == id)
            return 1;
    }
    return 0;
}

int addon_ghrepos_has_node(const addon_ghrepos_t *s, const char *node, size_t len)
{
    for (size_t i = 0; s != NULL && i < s->n; i++) {
        if (strlen(s->v[i].node_id) == len && memcmp(s->v[i].node_id, node, len) == 0)
            return 1;
    }
    return 0;
}

int addon_ghrepos_has_name(const addon_ghrepos_t *s, const char *owner, size_t olen,
                           const char *name, size_t nlen)
{
    for (size_t i = 0; s != NULL && i < s->n; i++) {
        const char *fn = s->v[i].full_name;
        if (strlen(fn) == olen + 1 + nlen && strncasecmp(fn, owner, olen) == 0 && fn[olen] == '/' &&
            strncasecmp(fn + olen + 1, name, nlen) == 0)
            return 1;
    }
    return 0;
}
