#include "addons/addon_blob.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "base/px_err.h"

int addon_blob_reserve(unsigned char **blob, size_t *cap, size_t len, size_t extra, size_t max)
{
    if (extra > max || len > max - extra)
        return PX_ETOOBIG;
    if (len + extra <= *cap)
        return 0;
    size_t n = *cap ? *cap : ADDON_BLOB_FIRST;
    while (n < len + extra)
        n = n > SIZE_MAX / 2 ? len + extra : n * 2;
    unsigned char *b = malloc(n); /* not realloc: the old block is wiped, not left behind */
    if (b == NULL)
        return PX_ENOMEM;
    if (*blob != NULL) {
        memcpy(b, *blob, len);
        addon_blob_free(*blob, *cap);
    }
    *blob = b;
    *cap = n;
    return 0;
}

void addon_blob_free(unsigned char *blob, size_t cap)
{
    if (blob == NULL)
        return;
    OPENSSL_cleanse(blob, cap);
    free(blob);
}
