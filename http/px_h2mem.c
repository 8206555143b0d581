#include "http/px_h2mem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Asked each time (glibc answers from memory, no system call): no static shared between the
 * loops' threads. */
static size_t px__page(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

static size_t px__map_len(size_t size)
{
    size_t pg = px__page();
    return (size + pg - 1) / pg * pg;
}

/* The slot holding p, or -1 when p came from malloc (or is NULL). */
static int px__slot(const px_h2mem_t *m, const void *p)
{
    if (p == NULL)
        return -1;
    for (int i = 0; i < PX_H2MEM_PAGED_MAX; i++)
        if (m->paged[i] == p)
            return i;
    return -1;
}

/* A paged block of size bytes in a free slot, or NULL when none is free or mmap fails (the
 * caller then uses malloc). Fresh anonymous pages read as zeros and cost nothing until written;
 * they are page-aligned, more than malloc's alignment. */
static void *px__paged_new(px_h2mem_t *m, size_t size)
{
    int ring = m->deflate_unused && !m->made && size == PX_H2MEM_RING;
    if ((size < PX_H2MEM_PAGED_MIN && !ring) || m->npaged == PX_H2MEM_PAGED_MAX ||
        size > SIZE_MAX / 2)
        return NULL;
    if (ring)
        m->deflate_unused = 0; /* the next one is the decoder's */
    void *p =
        mmap(NULL, px__map_len(size), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    int i = 0;
    while (m->paged[i] != NULL) /* a free slot exists: npaged < PX_H2MEM_PAGED_MAX */
        i++;
    m->paged[i] = p;
    m->size[i] = size;
    if (!m->made && size == PX_H2MEM_FRAMEBUF)
        m->frames |= 1u << i;
    m->npaged++;
    m->paged_bytes += size;
    return p;
}

static void px__paged_free(px_h2mem_t *m, int slot)
{
    munmap(m->paged[slot], px__map_len(m->size[slot]));
    m->paged_bytes -= m->size[slot];
    m->paged[slot] = NULL;
    m->size[slot] = 0;
    m->frames &= ~(1u << slot);
    m->npaged--;
}

static void *on_h2mem_malloc(size_t size, void *ud)
{
    void *p = px__paged_new(ud, size);
    return p != NULL ? p : malloc(size);
}

static void *on_h2mem_calloc(size_t n, size_t size, void *ud)
{
    if (size != 0 && n > SIZE_MAX / size)
        return NULL;
    void *p = px__paged_new(ud, n * size); /* already zero */
    return p != NULL ? p : calloc(n, size);
}

static void on_h2mem_free(void *p, void *ud)
{
    int slot = px__slot(ud, p);
    if (slot >= 0)
        px__paged_free(ud, slot);
    else
        free(p);
}

/* realloc(NULL, n) is how nghttp2 makes its frame buffer: a malloc. A block born small stays
 * with malloc whatever it grows to (its size is not known here); a paged one stays in place
 * while its new size needs the same number of pages (the mapping's length is derived from the
 * size kept), else moves. */
static void *on_h2mem_realloc(void *p, size_t size, void *ud)
{
    px_h2mem_t *m = ud;
    if (p == NULL)
        return on_h2mem_malloc(size, m);
    int slot = px__slot(m, p);
    if (slot < 0)
        return realloc(p, size);
    size_t old = m->size[slot];
    if (size >= PX_H2MEM_PAGED_MIN && px__map_len(size) == px__map_len(old)) {
        m->paged_bytes = m->paged_bytes - old + size;
        m->size[slot] = size;
        return p;
    }
    void *n = on_h2mem_malloc(size, m);
    if (n == NULL)
        return NULL; /* p stays valid, as with realloc */
    memcpy(n, p, old < size ? old : size);
    px__paged_free(m, px__slot(m, p));
    return n;
}

void px_h2mem_init(px_h2mem_t *m, nghttp2_mem *mem)
{
    mem->mem_user_data = m;
    mem->malloc = on_h2mem_malloc;
    mem->free = on_h2mem_free;
    mem->calloc = on_h2mem_calloc;
    mem->realloc = on_h2mem_realloc;
}

/* 1 when the page at p reads as zeros. */
static int px__page_zero(const unsigned char *p, size_t pg)
{
    static const unsigned char zero[256];
    for (size_t off = 0; off < pg; off += sizeof(zero))
        if (memcmp(p + off, zero, sizeof(zero)) != 0)
            return 0;
    return 1;
}

void px_h2mem_made(px_h2mem_t *m)
{
    m->made = 1;
}

size_t px_h2mem_trim(px_h2mem_t *m, int frames_dead)
{
    size_t pg = px__page(), dropped = 0;
    for (int i = 0; i < PX_H2MEM_PAGED_MAX; i++) {
        if (m->paged[i] == NULL)
            continue;
        int dead = frames_dead && (m->frames & (1u << i));
        size_t len = px__map_len(m->size[i]);
        unsigned char vec[64];
        size_t npg = len / pg;
        if (npg > sizeof(vec) || mincore(m->paged[i], len, vec) != 0)
            continue;
        for (size_t k = 0; k < npg; k++) {
            unsigned char *p = (unsigned char *)m->paged[i] + k * pg;
            /* a page back to zeros reads the same once dropped: a private anonymous page is
             * faulted in again zero-filled on the next touch */
            if ((vec[k] & 1) && (dead || px__page_zero(p, pg)) &&
                madvise(p, pg, MADV_DONTNEED) == 0)
                dropped += pg;
        }
    }
    return dropped;
}

size_t px_h2mem_resident(const px_h2mem_t *m)
{
    size_t pg = px__page(), total = 0;
    for (int i = 0; i < PX_H2MEM_PAGED_MAX; i++) {
        if (m->paged[i] == NULL)
            continue;
        size_t len = px__map_len(m->size[i]);
        unsigned char vec[64];
        size_t npg = len / pg;
        if (npg > sizeof(vec) || mincore(m->paged[i], len, vec) != 0)
            continue;
        for (size_t k = 0; k < npg; k++)
            total += (vec[k] & 1) ? pg : 0;
    }
    return total;
}
