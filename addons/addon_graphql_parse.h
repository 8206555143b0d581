/* A strict parser for GraphQL executable documents (the "ExecutableDocument" grammar of the
 * GraphQL specification, October 2021 edition plus the \u{...} escapes of later drafts):
 * operations and fragments only. It keeps what the operation allowlist needs: each operation's
 * type, name and top-level field names, with inline fragments at the root resolved two levels
 * deep as the reference proxy resolves them; on request (addon_gql_parse_nodes) also every field,
 * variable definition and argument value, for GitHub App repository scoping.
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

/* The nodes addon_gql_parse_nodes keeps (GitHub App repository scoping reads them): every
 * field (its name, not its alias), every variable definition and every argument value, in
 * document order, each with the index of the node it belongs to. */
typedef enum addon_gql_nkind {
    ADDON_GQL_N_FIELD = 1, /* key: the field's name; parent: the enclosing field */
    ADDON_GQL_N_VARDEF,    /* key: the variable's name (no '$'); its default value is a child */
    ADDON_GQL_N_INT,       /* values: text is the token as written */
    ADDON_GQL_N_FLOAT,
    ADDON_GQL_N_STRING, /* text with its quotes; escapes not decoded; block strings too */
    ADDON_GQL_N_NAME,   /* true, false, null or an enum value */
    ADDON_GQL_N_VAR,    /* text: the variable's name (no '$') */
    ADDON_GQL_N_LIST,   /* its items are children (empty key) */
    ADDON_GQL_N_OBJECT, /* its fields are children (key: the field name) */
} addon_gql_nkind_t;

#define ADDON_GQL_NONE ((size_t)-1) /* no parent: a top-level field or a variable definition */

typedef struct addon_gql_node {
    addon_gql_nkind_t kind;
    addon_str_t key; /* a value: the argument or input-object field it is bound to (empty for a
                        list item or a default value); borrowed from the source */
    addon_str_t text;
    size_t parent; /* a value's parent: its field (arguments, also of the field's
                      directives), list, object or variable definition; ADDON_GQL_NONE when
                      it is an argument of a directive outside any field */
    size_t end;    /* one past its last descendant: node i's subtree is [i, end), so a walk
                      can skip it or test "j lies under i" in constant time */
} addon_gql_node_t;

/* addon_gql_parse, keeping the nodes above as well. */
int addon_gql_parse_nodes(const char *src, size_t len, addon_gql_doc_t **out, char *err,
                          size_t errlen);

/* The nodes kept (0 for addon_gql_parse), and node i (borrowed from d; NULL out of range). */
size_t addon_gql_node_count(const addon_gql_doc_t *d);
const addon_gql_node_t *addon_gql_node(const addon_gql_doc_t *d, size_t i);

/* Frees the document. NULL is allowed. */
void addon_gql_free(addon_gql_doc_t *d);

/* "query", "mutation" or "subscription" (static). */
const char *addon_gql_type_name(addon_gql_type_t t);

#endif
