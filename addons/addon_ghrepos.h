/* The repositories of a GitHub App installation (GET {base_url}/installation/repositories,
 * paginated), kept with the entry's cached token for GraphQL repository scoping: each one's
 * database id, node ID and full name ("owner/name", compared case-insensitively as GitHub
 * compares them). */
#ifndef ADDON_GHREPOS_H
#define ADDON_GHREPOS_H

#include <stddef.h>
#include <stdint.h>

#define ADDON_GHREPOS_PER_PAGE 100                /* the reference's page size */
#define ADDON_GHREPOS_MAX_PAGES 100               /* pages fetched at most (10,000 repositories) */
#define ADDON_GHREPOS_PAGE_MAX (16 * 1024 * 1024) /* bytes of one page's answer */

typedef struct addon_ghrepos addon_ghrepos_t;

/* An empty set (taken by the caller; free with addon_ghrepos_free), or NULL (out of memory). */
addon_ghrepos_t *addon_ghrepos_new(void);
void addon_ghrepos_free(addon_ghrepos_t *s);

/* Adds one repository (name borrowed, copied). 0 or PX_ENOMEM/PX_ETOOBIG (PX_ESTATE once
 * sealed). */
int addon_ghrepos_add(addon_ghrepos_t *s, uint64_t id, const char *node_id, const char *full_name);

/* Reads one page of GET /installation/repositories (borrowed): {"total_count": N,
 * "repositories": [{"id", "node_id", "full_name", ...}, ...]}, adding each repository. *got:
 * the repositories on the page, *total: total_count. 0, or PX_EPARSE with why (static). */
int addon_ghrepos_page(addon_ghrepos_t *s, const char *body, size_t len, size_t *got,
                       uint64_t *total, const char **why);

/* Sorts the set for the lookups below (without it they scan it); nothing can be added after.
 * 0 or PX_ENOMEM (the set stays usable, unsorted). */
int addon_ghrepos_seal(addon_ghrepos_t *s);

size_t addon_ghrepos_count(const addon_ghrepos_t *s);

/* Membership: by database id, by node ID (exact), by "owner/name" (ASCII case-insensitive). */
int addon_ghrepos_has_id(const addon_ghrepos_t *s, uint64_t id);
int addon_ghrepos_has_node(const addon_ghrepos_t *s, const char *node, size_t len);
int addon_ghrepos_has_name(const addon_ghrepos_t *s, const char *owner, size_t olen,
                           const char *name, size_t nlen);

#endif
