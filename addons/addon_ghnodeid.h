/* GitHub GraphQL node IDs, decoded to the repository they belong to (GraphQL repository
 * scoping of GitHub App requests, docs/github-app.md).
 *
 * Two formats exist. The current one is "<PREFIX>_<base64url, unpadded, of a MessagePack
 * array>": a repository "R_" holds [0, repo database id]; objects a repository owns (issues
 * "I_", pull requests "PR_", labels "LA_", ...) hold [0, repo database id, object database
 * id]. The legacy one is standard base64 of "0<n>:<Type><database id>", e.g.
 * "010:Repository12345". The decoder is strict: the exact alphabet, canonical trailing bits,
 * only the MessagePack subset these IDs use (a fixarray of positive fixints and uint8..64),
 * every byte consumed. Anything else is undecodable. */
#ifndef ADDON_GHNODEID_H
#define ADDON_GHNODEID_H

#include <stddef.h>
#include <stdint.h>

#define ADDON_GHNODEID_MAX 256     /* bytes of a node ID accepted */
#define ADDON_GHNODEID_TYPE_MAX 64 /* bytes of a legacy type name */

typedef enum addon_ghnode_kind {
    ADDON_GHNODE_REPO = 1, /* a repository: repo_id is its database id */
    ADDON_GHNODE_IN_REPO,  /* an object a repository owns: repo_id is that repository's id */
    ADDON_GHNODE_OTHER,    /* well-formed, but not tied to a repository (a user, an org, ...) */
} addon_ghnode_kind_t;

typedef struct addon_ghnode {
    addon_ghnode_kind_t kind;
    uint64_t repo_id; /* ADDON_GHNODE_REPO and ADDON_GHNODE_IN_REPO */
    int legacy;       /* the legacy base64 "0<n>:<Type><id>" format */
} addon_ghnode_t;

/* Decodes the node ID s[0..len) (borrowed). 0 and *out, or PX_EPARSE (undecodable). */
int addon_ghnodeid_decode(const char *s, size_t len, addon_ghnode_t *out);

/* Encodes a current-format ID: prefix "_" base64url(MessagePack [ids...]) into out (cap outlen,
 * NUL-terminated). For tests and tools. 0 or PX_ETOOBIG. */
int addon_ghnodeid_encode(const char *prefix, const uint64_t *ids, size_t n, char *out,
                          size_t outlen);

#endif
