/* GraphQL repository scoping of GitHub App requests (reference §11.4; docs/github-app.md): the
 * repositories a GraphQL request body names, each of which must be one of the installation's.
 *
 * Targets: `repository(owner:, name:)` (a missing owner is taken from an enclosing
 * `repositoryOwner`/`user`/`organization(login:)`), arguments and input-object fields named
 * `repositoryNameWithOwner`, `nameWithOwner` or `...NameWithOwner` ("owner/name"), and node IDs
 * in arguments and input-object fields named `id`, `ids`, `...Id` or `...Ids` (but
 * `clientMutationId`), decoded to the repository that owns them (addon_ghnodeid.h). Literals,
 * variables (from "variables" or their defaults) and, in "variables", any such key at any depth.
 * Fail-secure: anything unreadable is refused. */
#ifndef ADDON_GHSCOPE_H
#define ADDON_GHSCOPE_H

#include <stddef.h>

#include "addons/addon_ghrepos.h"

#define ADDON_GHSCOPE_BODY_CAP (1024 * 1024) /* bytes of a GraphQL body (as the reference) */
#define ADDON_GHSCOPE_WORK_MAX 100000        /* targets and values visited per request */
#define ADDON_GHSCOPE_DETAIL_MAX 200         /* bytes of a detail */

typedef enum addon_ghscope_verdict {
    ADDON_GHSCOPE_PASS = 0,  /* every target is an installation repository (or there is none) */
    ADDON_GHSCOPE_OUTSIDE,   /* a target is outside the installation, or not tied to a repo */
    ADDON_GHSCOPE_UNREADABLE /* the body, its query or its variables could not be read */
} addon_ghscope_verdict_t;

/* Checks the GraphQL request body[0..len) (borrowed) against repos (borrowed; NULL: the
 * installation's repositories are unknown, so no target is allowed). Returns a verdict, or
 * PX_ENOMEM. detail (NUL-terminated, printable ASCII, at most ADDON_GHSCOPE_DETAIL_MAX bytes)
 * names the refused target ("repository:owner/name", "node-id:R_x (undecodable)") or the reason
 * ("<unparseable>", "<batched>", "<invalid-variables>", "<too-large>"). *ntargets: targets
 * seen. */
int addon_ghscope_check(const char *body, size_t len, const addon_ghrepos_t *repos, char *detail,
                        size_t dlen, size_t *ntargets);

#endif
