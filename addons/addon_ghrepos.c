/* The installation's repositories (addon_ghrepos.h): an array, and once sealed three sorted
 * views of it (by id, node ID, lowercase name) for binary search: a GraphQL body may name tens
 * of thousands of targets, an installation hold ten thousand repositories. */
#include "addons/addon_ghrepos.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/px_err.h"
#include "base/px_grow.h"

#define GHREPOS_NAME_MAX 256
#define GHREPOS_NODE_MAX 256
#define GHREPOS_MAX (ADDON_GHREPOS_PER_PAGE * ADDON_GHREPOS_MAX_PAGES)

typedef struct ghrepo {
    uint64_t id;
    char *node_id;
    char *full_name;
} ghrepo_t;

struct addon_ghrepos {
    ghrepo_t *v;
    size_t n, cap;
    const ghrepo_t **by_id, **by_node, **by_name; /* sorted views, once sealed */
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
    free(s->by_id);
    free(s->by_node);
    free(s->by_name);
    free(s);
}

int addon_ghrepos_add(addon_ghrepos_t *s, uint64_t id, const char *node_id, const char *full_name)
{
    if (s->by_id != NULL)
        return PX_ESTATE; /* sealed */
    int rc = px_grow(&s->v, &s->cap, s->n + 1, sizeof(*s->v), 64, GHREPOS_MAX);
    if (rc != 0)
        return rc;
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
        json_string_length(name) > GHREPOS_NAME_MAX || json_string_length(node) > GHREPOS_NODE_MAX)
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

static int ghrepos_cmp_id(const void *a, const void *b)
{
    uint64_t x = (*(const ghrepo_t *const *)a)->id, y = (*(const ghrepo_t *const *)b)->id;
    return x < y ? -1 : x > y;
}

static int ghrepos_cmp_node(const void *a, const void *b)
{
    return strcmp((*(const ghrepo_t *const *)a)->node_id, (*(const ghrepo_t *const *)b)->node_id);
}

static int ghrepos_cmp_name(const void *a, const void *b)
{
    return strcasecmp((*(const ghrepo_t *const *)a)->full_name,
                      (*(const ghrepo_t *const *)b)->full_name);
}

int addon_ghrepos_seal(addon_ghrepos_t *s)
{
    if (s->by_id != NULL || s->n == 0)
        return 0;
    const ghrepo_t **views[3];
    for (int k = 0; k < 3; k++) {
        views[k] = malloc(s->n * sizeof(*views[k]));
        if (views[k] == NULL) {
            for (int j = 0; j < k; j++)
                free(views[j]);
            return PX_ENOMEM;
        }
        for (size_t i = 0; i < s->n; i++)
            views[k][i] = &s->v[i];
    }
    qsort(views[0], s->n, sizeof(*views[0]), ghrepos_cmp_id);
    qsort(views[1], s->n, sizeof(*views[1]), ghrepos_cmp_node);
    qsort(views[2], s->n, sizeof(*views[2]), ghrepos_cmp_name);
    s->by_id = views[0];
    s->by_node = views[1];
    s->by_name = views[2];
    return 0;
}

size_t addon_ghrepos_count(const addon_ghrepos_t *s)
{
    return s != NULL ? s->n : 0;
}

int addon_ghrepos_has_id(const addon_ghrepos_t *s, uint64_t id)
{
    if (s != NULL && s->by_id != NULL) {
        ghrepo_t key = {.id = id};
        const ghrepo_t *k = &key;
        return bsearch(&k, s->by_id, s->n, sizeof(*s->by_id), ghrepos_cmp_id) != NULL;
    }
    for (size_t i = 0; s != NULL && i < s->n; i++) {
        if (s->v[i].id == id)
            return 1;
    }
    return 0;
}

int addon_ghrepos_has_node(const addon_ghrepos_t *s, const char *node, size_t len)
{
    if (s != NULL && s->by_node != NULL) {
        char buf[GHREPOS_NODE_MAX + 1];
        if (len > GHREPOS_NODE_MAX || memchr(node, '\0', len) != NULL)
            return 0;
        memcpy(buf, node, len);
        buf[len] = '\0';
        ghrepo_t key = {.node_id = buf};
        const ghrepo_t *k = &key;
        return bsearch(&k, s->by_node, s->n, sizeof(*s->by_node), ghrepos_cmp_node) != NULL;
    }
    for (size_t i = 0; s != NULL && i < s->n; i++) {
        if (strlen(s->v[i].node_id) == len && memcmp(s->v[i].node_id, node, len) == 0)
            return 1;
    }
    return 0;
}

int addon_ghrepos_has_name(const addon_ghrepos_t *s, const char *owner, size_t olen,
                           const char *name, size_t nlen)
{
    if (s != NULL && s->by_name != NULL) {
        char buf[2 * GHREPOS_NAME_MAX + 2];
        if (olen + 1 + nlen > GHREPOS_NAME_MAX || memchr(owner, '\0', olen) != NULL ||
            memchr(name, '\0', nlen) != NULL)
            return 0;
        snprintf(buf, sizeof(buf), "%.*s/%.*s", (int)olen, owner, (int)nlen, name);
        ghrepo_t key = {.full_name = buf};
        const ghrepo_t *k = &key;
        return bsearch(&k, s->by_name, s->n, sizeof(*s->by_name), ghrepos_cmp_name) != NULL;
    }
    for (size_t i = 0; s != NULL && i < s->n; i++) {
        const char *fn = s->v[i].full_name;
        if (strlen(fn) == olen + 1 + nlen && strncasecmp(fn, owner, olen) == 0 && fn[olen] == '/' &&
            strncasecmp(fn + olen + 1, name, nlen) == 0)
            return 1;
    }
    return 0;
}
