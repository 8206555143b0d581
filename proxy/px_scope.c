#include "proxy/px_scope.h"

#include <pthread.h>

#include "proxy/px_policy.h"

/* Guards what a reload changes in place (a sandbox's sources, the list of sandboxes, which
 * snapshot a scope has) against the loops that read it (--workers). Readers take it only when
 * something moved; a reload writes under it. */
static pthread_rwlock_t px__scope_lock = PTHREAD_RWLOCK_INITIALIZER;

void px_scope_rdlock(void)
{
    pthread_rwlock_rdlock(&px__scope_lock);
}

void px_scope_wrlock(void)
{
    pthread_rwlock_wrlock(&px__scope_lock);
}

void px_scope_unlock(void)
{
    pthread_rwlock_unlock(&px__scope_lock);
}

px_snapshot_t *px_scope_snap(px_scope_t *s)
{
    pthread_rwlock_rdlock(&px__scope_lock);
    px_snapshot_t *n = s->snap != NULL ? px_snapshot_ref(s->snap) : NULL;
    pthread_rwlock_unlock(&px__scope_lock);
    return n;
}

px_snapshot_t *px_scope_set_snap(px_scope_t *s, px_snapshot_t *n)
{
    pthread_rwlock_wrlock(&px__scope_lock);
    px_snapshot_t *old = s->snap;
    __atomic_store_n(&s->snap, n, __ATOMIC_RELEASE);
    pthread_rwlock_unlock(&px__scope_lock);
    return old;
}

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
    __atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
    return s;
}

void px_scope_unref(px_scope_t *s)
{
    if (s == NULL || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) > 0)
        return;
    if (s->release != NULL)
        s->release(s);
}
