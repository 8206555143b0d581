/* libFuzzer target for px_hello_sni, the ClientHello reader that decides where a passthrough
 * tunnel may go: any bytes, fed whole and in two pieces as they may arrive from a socket,
 * must give "more", "not a ClientHello" or one NUL-terminated name that fits, and the same
 * verdict whatever the split. A smaller name buffer must never be overrun. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/px_err.h"
#include "net/px_hello.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            abort();                                                                               \
    } while (0)

static int sni_of(const uint8_t *data, size_t len, char *sni, size_t cap)
{
    /* a copy of exactly len bytes, so ASan sees any read past the end */
    unsigned char *copy = malloc(len ? len : 1);
    CHECK(copy != NULL);
    if (len > 0)
        memcpy(copy, data, len);
    memset(sni, 'X', cap);
    int rc = px_hello_sni(copy, len, sni, cap);
    free(copy);
    CHECK(rc == 0 || rc == 1 || rc == PX_EPARSE);
    if (rc == 1) {
        size_t n = strnlen(sni, cap);
        CHECK(n < cap);
    }
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > PX_HELLO_MAX + 64)
        return 0;
    char whole[256];
    int rc = sni_of(data, size, whole, sizeof(whole));

    /* the first half alone: a verdict of "not a ClientHello" or a name may not change when
     * the rest arrives (the proxy acts on the first verdict it gets) */
    size_t half = size / 2;
    char part[256];
    int prc = sni_of(data, half, part, sizeof(part));
    if (prc == PX_EPARSE)
        CHECK(rc == PX_EPARSE);
    if (prc == 1) {
        CHECK(rc == 1);
        CHECK(strcmp(part, whole) == 0);
    }

    /* a name buffer too small for most names: a result or a refusal, never an overrun */
    char small[9];
    int src = sni_of(data, size, small, sizeof(small));
    if (src == 1) {
        CHECK(rc == 1);
        CHECK(strcmp(small, whole) == 0);
    }
    return 0;
}
