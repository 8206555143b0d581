#include "proxy/px_scope.h"

int px_scope_holds(const px_scope_t *s, const uint8_t addr[16])
{
    if (s->gone)
        return 0;
    for (size_t i = 0; i < s->nsrc; i++)
        if (px_srcnet_contains(&s->src[i], addr))
            return 1;
    return 0;
}

ca_t *px_scope_ca(const px_scope_t *s, ca_t *fallback)
{
    /* with --ca-per-conversation a sandbox never falls back: there is no CA to fall back to */
    if (s->ca != NULL || s->own_ca_only)
        return s->ca;
    return fallback;
}

px_scope_t *px_scope_ref(px_scope_t *s)
{
    s->refs++;
    return s;
}

void px_scope_unref(px_scope_t *s)
{
    if (s == NULL || --s->refs > 0)
        return;
    if (s->release != NULL)
        s->release(s);
}
