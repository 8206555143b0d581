/* nghttp2's memory for one HTTP/2 session (nghttp2_mem): small blocks from malloc, large ones
 * (nghttp2 keeps a 16 KiB frame buffer per session for its whole life, and a 4 KiB table) as
 * anonymous pages of their own, which the kernel backs only where bytes are written. An idle
 * connection that only ever sent short frames then holds one page of that buffer instead of four
 * (malloc would hand it pages other connections' TLS buffers touched a moment before), and
 * px_h2mem_trim() gives even those back once the session is idle. */
#ifndef PX_H2MEM_H
#define PX_H2MEM_H

#include <nghttp2/nghttp2.h>
#include <stddef.h>

/* Blocks of at least this many bytes get pages of their own; fewer go to malloc. */
#define PX_H2MEM_PAGED_MIN 4096
/* Paged blocks one session may hold at once; past that, malloc serves them too. */
#define PX_H2MEM_PAGED_MAX 5
/* The ring of an HPACK table's entries as nghttp2 makes it (128 pointers: a 4 KiB table, 32
 * bytes of overhead an entry). */
#define PX_H2MEM_RING (4096 / 32 * sizeof(void *))
/* The size of nghttp2's frame buffer (9-byte frame header, 1 pad length byte, 16 KiB payload:
 * NGHTTP2_FRAMEBUF_CHUNKLEN, nghttp2 1.52; its chain header is a malloc of its own). A block of
 * that size made while the session is being made is the frame buffer: frames are packed there,
 * then copied out by the owner, so it holds nothing once the session has nothing to send. Were
 * the size other (another nghttp2), no block is taken for it and none is given back. */
#define PX_H2MEM_FRAMEBUF (9 + 1 + 16384)

typedef struct px_h2mem {
    void *paged[PX_H2MEM_PAGED_MAX]; /* the blocks handed out (NULL: free slot) */
    size_t size[PX_H2MEM_PAGED_MAX]; /* ... and the bytes each was asked for */
    size_t npaged;                   /* slots in use */
    size_t paged_bytes;              /* bytes those blocks were asked for */
    unsigned frames;                 /* slots (bits) holding the frame buffer */
    int made;                        /* px_h2mem_made() was called */
    /* Set by the owner before the session is made when its encoder has no dynamic table: the
     * first ring made (the encoder's: nghttp2 makes it before the decoder's) then gets a page,
     * which nothing writes, so it costs no memory. Were it the decoder's, it would cost a page
     * once written instead of 1 KiB: only memory, never what the session does. */
    int deflate_unused;
} px_h2mem_t;

/* Fills *mem (handed to nghttp2_session_*_new3) so that nghttp2 allocates through m, which the
 * caller keeps (zeroed) until after nghttp2_session_del(). */
void px_h2mem_init(px_h2mem_t *m, nghttp2_mem *mem);

/* The session was made (nghttp2_session_*_new3 returned): blocks from now on are not its frame
 * buffer. */
void px_h2mem_made(px_h2mem_t *m);

/* For an idle session: gives back the pages of m's paged blocks that are in memory and hold only
 * zeros (nghttp2's stream table once its streams are gone: nothing any reader could tell apart),
 * and, when frames_dead (nghttp2 has no frame in hand: nghttp2_session_want_write() is 0 and
 * every byte it gave was copied out), every page of its frame buffer. Reads each resident page
 * once. Returns the bytes given back. */
size_t px_h2mem_trim(px_h2mem_t *m, int frames_dead);

/* Bytes of m's paged blocks the kernel holds in memory (mincore), for tests and benchmarks. */
size_t px_h2mem_resident(const px_h2mem_t *m);

#endif
