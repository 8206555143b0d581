/* The readings of a request path: the ways an upstream may read one path (docs/allowlist.md,
 * "Readings"). Servers disagree on a path's spelling: nginx merges runs of '/', Tomcat and Spring
 * drop ";parameters" from each segment, every server removes "." segments. A request is decided
 * on each reading; the policy allows it only if every reading is allowed, and a block entry or
 * a feature's path applies when any reading matches. Pure; no allocation. */
#ifndef PX_PATH_H
#define PX_PATH_H

#include <stddef.h>

/* The transformations of a reading, combined as bits; they apply in this order. */
#define PX_PATH_PARAMS 1u /* ";parameters" removed from each segment */
#define PX_PATH_DOTS 2u   /* "." segments removed */
#define PX_PATH_MERGE 4u  /* runs of '/' merged into one */
#define PX_PATH_ALL 7u    /* every subset of the three, 0 (as sent) included, is a reading */

/* The transformations that would change the decoded path d[0..len) (no query), as bits: the
 * readings worth making. 0 for most paths (one reading: as sent). Borrows d. */
unsigned px_path_changes(const char *d, size_t len);

/* Writes the reading `how` (a subset of PX_PATH_ALL) of the decoded path d[0..len) (no query)
 * into out, which has room for len bytes (a reading never grows). Returns its length. */
size_t px_path_reading(const char *d, size_t len, unsigned how, char *out);

/* 1 when how is a subset of the changes (so a distinct reading; 0 always is). */
static inline int px_path_worth(unsigned changes, unsigned how)
{
    return (how & ~changes) == 0;
}

/* Calls pred on each reading of the raw (percent-encoded) path raw[0..len), query excluded (the
 * path ends at the first raw '?'), decoded once; stops at the first reading pred returns nonzero
 * for and returns that value; 0 when none did. A path over PX_PATH_ANY_MAX bytes (more than the
 * proxy's head cap) is not read: the result is then 1 (the caller's feature applies:
 * fail-secure). Borrows raw; the reading passed to pred is valid during the call. Uses two
 * buffers of the path's size on the stack. */
#define PX_PATH_ANY_MAX (64 * 1024)
int px_path_any(const char *raw, size_t len, int (*pred)(const char *path, size_t len, void *ctx),
                void *ctx);

/* 1 when a reading of the raw path raw[0..len) (px_path_any) is the feature path base (a
 * NUL-terminated "/v1/messages"), compared in any case, alone or followed by '/' or by '.' (a
 * format suffix: "/v1/messages.json"). A feature's path applies to every spelling that may
 * reach it. Borrows both. */
int px_path_under(const char *raw, size_t len, const char *base);

/* The same rule on one reading path[0..len) (ctx: the NUL-terminated base), as a px_path_any()
 * predicate. */
int px_path_is_under(const char *path, size_t len, void *ctx);

#endif
