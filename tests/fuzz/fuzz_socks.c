/* libFuzzer target for the SOCKS5 handshake reader (net/px_socks.c), what the SOCKS listener
 * reads from any client before anything is decided: any bytes, read as a greeting and then
 * (after the greeting's bytes) as a request, whole and in every split, must give "more", a
 * refusal with one of RFC 1928's reply codes, or a request whose host is NUL-terminated text
 * that fits, with the same verdict whatever the split. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/px_err.h"
#include "net/px_socks.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            abort();                                                                               \
    } while (0)

/* the reader on a copy of exactly len bytes, so ASan sees any read past the end */
static int request_of(const uint8_t *data, size_t len, px_socks_req_t *r)
{
    unsigned char *copy = malloc(len ? len : 1);
    CHECK(copy != NULL);
    if (len > 0)
        memcpy(copy, data, len);
    int rc = px_socks_request(copy, len, r);
    free(copy);
    CHECK(rc >= 0 || rc == PX_EPARSE);
    CHECK(rc <= PX_SOCKS_REQUEST_MAX && (size_t)(rc > 0 ? rc : 0) <= len);
    if (rc > 0) {
        size_t hl = strnlen(r->host, sizeof(r->host));
        CHECK(hl > 0 && hl < sizeof(r->host));
        CHECK(r->atyp == PX_SOCKS_IPV4 || r->atyp == PX_SOCKS_IPV6 || r->atyp == PX_SOCKS_NAME);
        CHECK(r->port != 0 && r->rep == PX_SOCKS_OK);
    }
    if (rc == PX_EPARSE)
        CHECK(r->rep == PX_SOCKS_FAILURE || r->rep == PX_SOCKS_BAD_ATYP);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    int noauth;
    unsigned char *copy = malloc(len ? len : 1);
    CHECK(copy != NULL);
    if (len > 0)
        memcpy(copy, data, len);
    int g = px_socks_greeting(copy, len, &noauth);
    free(copy);
    CHECK(g >= 0 || g == PX_EPARSE);
    CHECK(g <= PX_SOCKS_GREETING_MAX && (size_t)(g > 0 ? g : 0) <= len);
    /* a prefix never refuses what the whole accepts */
    for (size_t n = 0; g > 0 && n < (size_t)g; n++)
        CHECK(px_socks_greeting(data, n, &noauth) == 0);
    const uint8_t *rq = g > 0 ? data + g : data;
    size_t rl = g > 0 ? len - (size_t)g : len;
    px_socks_req_t r, r2;
    int rc = request_of(rq, rl, &r);
    size_t whole = rc > 0 ? (size_t)rc : rl;
    for (size_t n = 0; n < whole; n++) {
        int prc = request_of(rq, n, &r2);
        CHECK(prc == 0 || prc == rc);
    }
    unsigned char out[PX_SOCKS_REPLY_MAX];
    CHECK(px_socks_reply(out, r.rep, (const uint8_t *)r.host, len % 17, r.port) <= sizeof(out));
    return 0;
}
