/* The GraphQL operation allowlist (docs/graphql.md): a request-body filter for requests allowed
 * by a url_prefixes entry with a `graphql` block. */
#ifndef ADDON_GRAPHQL_H
#define ADDON_GRAPHQL_H

#include "addons/addon.h"

#define ADDON_GRAPHQL_BODY_CAP (1024 * 1024) /* a larger body is refused (<too-large>) */
#define ADDON_GRAPHQL_TAG_MAX 200            /* field-name bytes in a log tag */

/* The addon (static storage). It must come after the allowlist in the addon list. */
const addon_t *addon_graphql(void);

#endif
