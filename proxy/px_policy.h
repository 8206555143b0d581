/* The configuration snapshot (allowlist + replacements) and the addon chain. SIGHUP loads a
 * new snapshot and swaps the engine's pointer; a request keeps the one it started with. */
#ifndef PX_POLICY_H
#define PX_POLICY_H

#include "addons/addon.h"
#include "proxy/px_config.h"

typedef struct addon_leak addon_leak_t;

typedef struct px_snapshot {
    int refs;
    addon_config_t cfg;
    addon_leak_t *leak; /* the real secret values and canaries no request may carry; NULL: none */
    struct addon_scrub *scrub; /* the real values no response may carry to the agent; NULL: none */
    int scrub_same_length;     /* every replacement is as long as what it replaces */
} px_snapshot_t;

/* Loads the allowlist and replacements named in cfg. At startup a missing allowlist blocks
 * everything (said once on stderr) and a missing replacements file means no masking; an
 * invalid file is an error. On reload (startup 0) any problem keeps the old snapshot: returns
 * a negative code after saying why on stderr. */
int px_snapshot_load(const px_config_t *cfg, int startup, px_snapshot_t **out);

px_snapshot_t *px_snapshot_ref(px_snapshot_t *s);

/* Drops a reference; NULL is a no-op. */
void px_snapshot_unref(px_snapshot_t *s);

/* The addons every request goes through, in order (NULL-terminated): the policy addons, then
 * the credential ones (AWS, masking). The body filters run in this order. */
const addon_t *const *px_addons(void);
/* The policy addons alone, in order (NULL-terminated): the policy stage runs their heads. */
const addon_t *const *px_policy_addons(void);

#endif
