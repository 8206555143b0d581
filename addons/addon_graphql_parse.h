/* A strict parser for GraphQL executable documents (the "ExecutableDocument" grammar of the
 * GraphQL specification, October 2021 edition plus the \u{...} escapes of later drafts):
 * operations and fragments only. It keeps what the operation allowlist needs: each operation's
 * type, name and top-level field names, with inline fragments at the root resolved two levels
 * deep as the reference proxy resolves them.
 *
 * Fail-secure: anything outside the grammar is an error, and so are type-system definitions
 * and extensions (a GraphQL server refuses them in an executable request), invalid UTF-8, and
 * documents past the caps below. */
#ifndef ADDON_GRAPHQL_PARSE_H
#define ADDON_GRAPHQL_PARSE_H

#include <stddef.h>

#include "addons/addon.h"

/* Hard caps. */
#define ADDON_GQL_MAX_SIZE (1024 * 1024) /* bytes of document text */
#define ADDON_GQL_MAX_TOKENS 100000      /* lexical tokens (comments and commas not counted) */
#define ADDON_GQL_MAX_DEPTH 64           /* nested selection sets, lists, objects and types */
#define ADDON_GQL_MAX_OPS 256            /* operation definitions in one document */
#define ADDON_GQL_MAX_FIELDS 4096        /* top-level fields over all operations */

typedef enum addon_gql_type {
    ADDON_GQL_QUERY = 0,
    ADDON_GQL_MUTATION,
    ADDON_GQL_SUBSCRIPTION,
} addon_gql_type_t;

typedef struct addon_gql_op {
    addon_gql_type_t type;
    addon_str_t name;          /* empty when anonymous; borrowed from the source */
    const addon_str_t *fields; /* top-level field names (not aliases), in document order */
    size_t nfields;
    int root_spread; /* a named fragment spread at the root (or inside a root inline fragment,
                        or inline fragments nested deeper than two): fields is then incomplete */
} addon_gql_op_t;

typedef struct addon_gql_doc addon_gql_doc_t;

/* Parses src[0..len) (borrowed: the names in the result point into it, so it must outlive the
 * document). 0 and *out (free with addon_gql_free); PX_EPARSE (with "line:col: message" in err),
 * PX_ETOOBIG (a cap) or PX_ENOMEM. */
int addon_gql_parse(const char *src, size_t len, addon_gql_doc_t **out, char *err, size_t errlen);

/* Operation definitions in the document (at least one unless it holds only fragments). */
size_t addon_gql_count(const addon_gql_doc_t *d);

/* Operation i (borrowed from d), or NULL when out of range. */
const addon_gql_op_t *addon_gql_op(const addon_gql_doc_t *d, size_t i);

/* Frees the document. NULL is allowed. */
void addon_gql_free(addon_gql_doc_t *d);

/* "query", "mutation" or "subscription" (static). */
const char *addon_gql_type_name(addon_gql_type_t t);

#endif
