/* Fuzzer for the answers airlock reads from services it calls itself: GitHub's installation
 * token answer (addon_ghapp_parse_token, with its expires_at time) and the decision webhook's
 * answer (px_decide_parse_answer). The first byte picks the parser (bit 0) and, for the token,
 * the size of the caller's buffer (bits 1-7); the rest is the body. Never a crash, a leak or an
 * out-of-bounds read; an accepted token is NUL-terminated inside the buffer, 1 to
 * ADDON_GHAPP_TOKEN_MAX printable bytes without a space, and comes with no message; a refused
 * one leaves a message and the buffer untouched. An accepted decision is allow or deny with one
 * of the three scopes; a refused one has a message. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "addons/addon_ghapp.h"
#include "proxy/px_decide.h"
#include "proxy/px_hold.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_token(const uint8_t *data, size_t size, size_t cap)
{
    char tok[ADDON_GHAPP_TOKEN_MAX + 2];
    memset(tok, 'x', sizeof(tok));
    int64_t expires = -1;
    const char *why = NULL;
    int rc = addon_ghapp_parse_token((const char *)data, size, tok, cap, &expires, &why);
    if (rc != 0) {
        if (why == NULL || why[0] == '\0')
            abort();
        for (size_t i = 0; i < sizeof(tok); i++)
            if (tok[i] != 'x')
                abort(); /* nothing of a refused answer is written */
        return;
    }
    const char *z = memchr(tok, '\0', cap);
    if (why != NULL || z == NULL || z == tok || (size_t)(z - tok) > ADDON_GHAPP_TOKEN_MAX)
        abort();
    for (const char *p = tok; p < z; p++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
            abort();
    for (size_t i = cap; i < sizeof(tok); i++)
        if (tok[i] != 'x')
            abort(); /* nothing past the caller's buffer */
}

static void fuzz_decision(const uint8_t *data, size_t size)
{
    int allow = -1, scope = -2;
    const char *why = NULL;
    int rc = px_decide_parse_answer((const char *)data, size, &allow, &scope, &why);
    if (rc != 0) {
        if (why == NULL || why[0] == '\0')
            abort();
        return;
    }
    if ((allow != 0 && allow != 1) ||
        (scope != PX_HOLD_SCOPE_ONCE && scope != PX_HOLD_SCOPE_CONVERSATION &&
         scope != PX_HOLD_SCOPE_PERSIST))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (data[0] & 1) {
        fuzz_decision(data + 1, size - 1);
    } else {
        /* 2..128 bytes, or the whole buffer (ADDON_GHAPP_TOKEN_MAX + 2) */
        size_t cap = data[0] >> 1 == 0 ? ADDON_GHAPP_TOKEN_MAX + 2 : (size_t)(data[0] >> 1) + 1;
        fuzz_token(data + 1, size - 1, cap);
    }
    return 0;
}
