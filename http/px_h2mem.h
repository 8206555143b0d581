/* nghttp2's memory for one HTTP/2 session (nghttp2_mem): small blocks from malloc, large ones
 * (nghttp2 keeps a 16 KiB frame buffer per session for its whole life, and a 4 KiB table) as
 * anonymous pages of their own, which the kernel backs only where bytes are written. An idle
 * connection that only ever sent short frames then holds one page of that buffer instead of four
 * (malloc would hand it pages other connections' TLS buffers touched a moment before). */
#ifndef PX_H2MEM_H
#define PX_H2MEM_H

#include <nghttp2/nghttp2.h>
#include <stddef.h>

/* Blocks of at least this many bytes get pages of their own; fewer go to malloc. */
#define PX_H2MEM_PAGED_MIN 4096
/* Paged blocks one session may hold at once; past that, malloc serves them too. */
#define PX_H2MEM_PAGED_MAX 4

typedef struct px_h2mem {
    void *paged[PX_H2MEM_PAGED_MAX]; /* the blocks handed out (NULL: free slot) */
    size_t size[PX_H2MEM_PAGED_MAX]; /* ... and the bytes each was asked for */
    size_t npaged;                   /* slots in use */
    size_t paged_bytes;              /* bytes those blocks were asked for */
} px_h2mem_t;

/* Fills *mem (handed to nghttp2_session_*_new3) so that nghttp2 allocates through m, which the
 * caller keeps (zeroed) until after nghttp2_session_del(). */
void px_h2mem_init(px_h2mem_t *m, nghttp2_mem *mem);

/* Bytes of m's paged blocks the kernel holds in memory (mincore), for tests and benchmarks. */
size_t px_h2mem_resident(const px_h2mem_t *m);

#endif
