/* Queued socket writes shared by the client and upstream sides: one uv_write per buffer, the
 * bytes either copied into the request or taken from the caller. */
#ifndef PX_WRITE_H
#define PX_WRITE_H

#include <stddef.h>
#include <uv.h>

/* Queues len bytes on s. owned (when not NULL) is data's heap block, taken; otherwise the bytes
 * are copied. cb fires when written; it must call px_write_done(). Returns 0, or a negative
 * code (owned freed, cb never fires). */
int px_write(uv_stream_t *s, const char *data, size_t len, char *owned, void *owner,
             uv_write_cb cb);

/* Releases a finished write and returns the owner given to px_write(). */
void *px_write_done(uv_write_t *req);

#endif
