/* The approvals drafts file (docs/approvals.md): what `airlock approve --scope persist`
 * approved, written beside the allowlist as `<allowlist stem>.approved.yaml` in the allowlist's
 * own YAML format (url_prefixes entries), each entry under a comment that says its ID, who
 * approved it and when. airlock writes the whole file each time (a temp file renamed over it,
 * mode 0600), after checking that the new text loads as an allowlist; it refuses to rewrite a
 * file with a line it did not write. px_drafts_merge() adds the entries to a policy being
 * loaded (start-up, SIGHUP, `airlock check`). */
#ifndef PX_DRAFTS_H
#define PX_DRAFTS_H

#include <stddef.h>

#include "addons/addon_policy.h"
#include "proxy/px_config.h"
#include "proxy/px_hold.h"

#define PX_DRAFTS_FILE_MAX (1024 * 1024) /* a drafts file airlock reads back */
#define PX_DRAFTS_MAX 1024               /* entries in one drafts file */
#define PX_DRAFTS_METHODS_MAX 128        /* "GET,POST,..." */

/* One approved entry. host and path are NUL-ended and owned by the set they are in. */
typedef struct px_draft {
    unsigned id; /* a1, a2, ... */
    char who[48];
    char when[32];                       /* 2026-11-28T13:45:00Z */
    char hold[24];                       /* the hold it answered: "h3" */
    char methods[PX_DRAFTS_METHODS_MAX]; /* "GET,POST"; "" any method */
    char *host, *path;                   /* path: a pattern, "" any path */
} px_draft_t;

typedef struct px_drafts {
    px_draft_t *v;
    size_t n;
} px_drafts_t;

/* The drafts file beside allowlist (borrowed): its directory, its name up to the last dot (the
 * whole name when none), ".approved.yaml". 0, or PX_ETOOBIG when it does not fit len. */
int px_drafts_path(const char *allowlist, char *buf, size_t len);

/* The drafts file of a conversation: with --sandboxes (cfg->sandboxes_dir), the one beside
 * sandbox's allowlist (sandbox NULL or "-": PX_ECONFIG); else the one beside --allowlist. */
int px_drafts_path_for(const px_config_t *cfg, const char *sandbox, char *buf, size_t len);

/* Reads the drafts file at path into *out (empty when there is none). 0, or PX_ECONFIG with
 * "path:line: why" in err (a line airlock did not write), PX_ETOOBIG, PX_ENOMEM or a libuv
 * code. */
int px_drafts_read(const char *path, px_drafts_t *out, char *err, size_t errlen);

void px_drafts_free(px_drafts_t *d);

/* Appends d (borrowed; its id is ignored) to the file at path as the next ID, stored in *id.
 * The file is left as it was on any error: 0, or negative with why in err. */
int px_drafts_add(const char *path, const px_draft_t *d, unsigned *id, char *err, size_t errlen);

/* Removes entry id from the file at path, a copy of it into *gone (may be NULL; host and path
 * then owned by the caller: free them). 0, PX_ENOENT (no such entry), or negative with err. */
int px_drafts_remove(const char *path, unsigned id, px_draft_t *gone, char *err, size_t errlen);

/* Checks a pattern and a method list given to `airlock approve` against the held request's
 * method and path (the query included; both borrowed): 0, or PX_ECONFIG with why in err. */
int px_drafts_check_grant(const char *pattern, const char *methods, const char *method,
                          const char *path, char *err, size_t errlen);

/* Adds the entries of the drafts file beside p's allowlist (allowlist, borrowed) to p (being
 * loaded, not shared). 0 when merged or there is none; else negative with "file:line...: why"
 * in err and p unchanged (the caller says so and loads the allowlist alone). */
int px_drafts_merge(addon_policy_t *p, const char *allowlist, char *err, size_t errlen);

/* Approves pending question id of t with scope (PX_HOLD_SCOPE_*), a path pattern and a method
 * list (NULL: the held request's own), by who (borrowed): checks them against the held request
 * (px_drafts_check_grant) and, for persist, appends the entry to the conversation's drafts file
 * (cfg, the question's sandbox) before anything is decided. The number of requests answered, or
 * negative with why in msg (nothing decided, the file unchanged). */
int px_drafts_approve(px_hold_t *t, const px_config_t *cfg, uint64_t id, int scope,
                      const char *pattern, const char *methods, const char *by, char *msg,
                      size_t len);

#endif
