/* Fuzzer for the answer parser of values fetched from AWS (addon_awssecret_parse). The first
 * byte picks the source and status: bit 0 SSM, bit 1 a json_key ("token"), bits 2-3 the status
 * (200, 400, 500, 403); the rest is the body. Never a crash, a leak, an out-of-bounds read, a
 * value past its cap or an empty value, and a message always ends within its buffer. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "addons/addon_awssecret.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static const int status[4] = {200, 400, 500, 403};
    addon_awssecret_src_t src = {.ssm = data[0] & 1,
                                 .id = "x",
                                 .json_key = (data[0] & 2) && !(data[0] & 1) ? "token" : NULL,
                                 .with_decryption = 1};
    char value[256], err[192];
    size_t vlen = 0;
    int retry = 0;
    memset(err, 'x', sizeof(err));
    int rc = addon_awssecret_parse(&src, status[(data[0] >> 2) & 3], (const char *)data + 1,
                                   size - 1, value, sizeof(value), &vlen, &retry, err, sizeof(err));
    if (rc == 0 && (vlen == 0 || vlen > sizeof(value) || status[(data[0] >> 2) & 3] != 200))
        abort();
    if (rc != 0 && memchr(err, '\0', sizeof(err)) == NULL)
        abort();
    return 0;
}
