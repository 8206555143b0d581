/* Fuzzes the response side of the HTTP/1 codec the proxy runs on upstream connections
 * (px_h1.c in response mode): interim (1xx) heads, the final head, bodies framed by length,
 * chunks or the close, trailer fields, in three reads from buffers of their own, then the
 * connection's end. The first bytes pick the splits, whether the request was a HEAD, and
 * whether the end callback starts the next response at once (px_h1_next from on_end, as the
 * upstream client does when the owner's next request takes the connection). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/px_h1.h"

typedef struct state {
    size_t heads, finals, ends;
    uint64_t bytes;
    px_h1_t *p;
    int next_on_end;
} state_t;

static int on_head(void *owner, px_msg_t *m)
{
    state_t *st = owner;
    st->heads++;
    for (size_t i = 0; i < m->n; i++)
        if ((size_t)m->names[i].off + m->names[i].len > m->len ||
            (size_t)m->values[i].off + m->values[i].len > m->len)
            __builtin_trap();
    if (m->status < 100 || m->status > 999)
        __builtin_trap();
    if (m->status >= 200 || m->status == 101)
        st->finals++;
    if (!st->next_on_end && st->heads > PX_INTERIM_MAX + 1)
        __builtin_trap(); /* the interim cap holds */
    px_msg_free(m);
    return 0;
}

static int on_data(void *owner, const char *data, size_t len)
{
    state_t *st = owner;
    volatile char c = len ? data[len - 1] : 0;
    (void)c;
    st->bytes += len;
    return 0;
}

static int on_end(void *owner, const px_fields_t *t)
{
    state_t *st = owner;
    st->ends++;
    if (st->ends > st->finals)
        __builtin_trap(); /* an end only for a final response */
    if (t != NULL && (t->n > PX_TRAILERS_MAX || t->len > PX_TRAILER_MAX))
        __builtin_trap();
    if (st->next_on_end)
        px_h1_next(st->p);
    return 1;
}

static const px_h1_cbs_t cbs = {on_head, on_data, on_end};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    state_t st;
    memset(&st, 0, sizeof(st));
    const char *in = (const char *)data + 3;
    size_t len = size - 3;
    size_t cut1 = len ? data[0] % (len + 1) : 0;
    size_t cut2 = cut1 + (len - cut1 ? data[1] % (len - cut1 + 1) : 0);
    size_t cuts[4] = {0, cut1, cut2, len};
    px_h1_t p;
    px_h1_init(&p, 0, &cbs, &st);
    st.p = &p;
    st.next_on_end = (data[2] & 2) != 0;
    if (data[2] & 1)
        px_h1_expect_no_body(&p);
    int done = 0;
    for (int i = 0; i < 3 && !done; i++) {
        size_t n = cuts[i + 1] - cuts[i];
        char *buf = malloc(n + 1);
        if (buf == NULL)
            break;
        if (n > 0)
            memcpy(buf, in + cuts[i], n);
        size_t off = 0, used;
        do {
            used = 0;
            size_t ends = st.ends;
            if (px_h1_feed(&p, buf + off, n - off, &used) < 0) {
                if (p.reason == NULL)
                    __builtin_trap();
                done = 1;
            } else if (p.state == PX_H1_DONE || p.state == PX_H1_UPGRADED) {
                done = 1; /* the proxy drops bytes after a complete response */
            } else if (used != n - off && (!st.next_on_end || st.ends == ends)) {
                __builtin_trap(); /* nothing pauses here but the next response's start */
            } else if (st.next_on_end && st.ends != ends && p.state != PX_H1_HEAD) {
                __builtin_trap(); /* after the end the next response's head is read */
            }
            off += used;
        } while (!done && off < n && used > 0);
        free(buf);
    }
    if (!done)
        px_h1_finish(&p);
    px_h1_free(&p);
    return 0;
}
