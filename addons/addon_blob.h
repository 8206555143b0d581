/* Secret bytes (real values and the patterns made from them) kept in one heap block that never
 * leaves a copy behind: growing it allocates a new block, copies the bytes in use, and wipes the
 * old block before freeing it (realloc could move them and leave them in freed memory); freeing
 * wipes too. The secret guard's patterns (addon_leak.c) and the response scrubber's
 * (addon_scrub.c) live in one each. */
#ifndef ADDON_BLOB_H
#define ADDON_BLOB_H

#include <stddef.h>

#define ADDON_BLOB_FIRST 4096 /* bytes allocated the first time */

/* Makes room for extra more bytes after the first len of *blob (capacity *cap; NULL and 0 to
 * start): the capacity doubles from ADDON_BLOB_FIRST until they fit. 0; PX_ETOOBIG when
 * len + extra would pass max; PX_ENOMEM (*blob and *cap unchanged on failure). */
int addon_blob_reserve(unsigned char **blob, size_t *cap, size_t len, size_t extra, size_t max);

/* Wipes blob's cap bytes and frees it. NULL is allowed. */
void addon_blob_free(unsigned char *blob, size_t cap);

#endif
