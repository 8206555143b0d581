/* The masked-secret addon (docs/replacements.md): for allowed requests that no other
 * credential mechanism handled, swaps surrogates for real values in scoped headers
 * (addon_secrets_apply) and annotates the access line. */
#ifndef ADDON_MASKING_H
#define ADDON_MASKING_H

#include "addons/addon.h"

/* The addon (static storage). */
const addon_t *addon_masking(void);

#endif
