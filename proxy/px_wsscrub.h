/* Response scrubbing on a WebSocket (docs/replacements.md, "WebSocket"): the frames the upstream
 * sends the agent are read (base/px_wsframe.c) and written again with every real value in their
 * payloads replaced by its surrogate (addons/addon_scrub.h, the same matcher as the HTTP
 * responses'). A data message (text or binary, fragmented or not) is one scrub stream: a value
 * split across frames or reads is found, and at most the longest pattern less one byte of it
 * is held back. Control frames (ping, pong, close: 125 bytes at most) are scrubbed whole.
 *
 * Framing. Every frame goes out whole, its header giving the scrubbed length (7, 16 or 64-bit
 * form, the shortest that fits), so between two feeds the output is always between frames. A
 * data frame whose scrubbed payload passes PX_WSSCRUB_FRAME_MAX, or a fragment that ends while
 * the stream still holds bytes that may begin a value, goes out as more or fewer fragments: the
 * message is the same, its fragmentation may differ (RFC 6455 5.4 lets an intermediary do that
 * when no extension is in use). An unfragmented message up to PX_WSSCRUB_FRAME_MAX bytes
 * without a value goes out byte for byte as it came (without a copy when its header, in the
 * shortest form, and its payload arrive in one read: it is scanned whole).
 *
 * What it refuses (the feed fails, the caller closes the WebSocket): what px_wsframe refuses
 * (RSV bits, i.e. a compressed frame: no extension is negotiated while the scrubber is on, so
 * permessage-deflate cannot appear legitimately), and a masked frame (a server never masks). */
#ifndef PX_WSSCRUB_H
#define PX_WSSCRUB_H

#include <stddef.h>
#include <stdint.h>

#include "addons/addon_scrub.h"

#define PX_WSSCRUB_FRAME_MAX (64 * 1024) /* scrubbed payload bytes gathered before a frame goes */

typedef struct px_wsscrub px_wsscrub_t;

/* Receives whole output frames (borrowed: valid during the call). 0 to go on; a negative value
 * stops the feed, which returns it. */
typedef int (*px_wsscrub_emit_cb)(void *arg, const char *data, size_t len);

/* A rewriter of the frames of one upstream-to-agent direction over m (kept: m must outlive it).
 * NULL when out of memory. */
px_wsscrub_t *px_wsscrub_new(const addon_scrub_t *m);
void px_wsscrub_free(px_wsscrub_t *w);

/* Feeds data[0..len) (borrowed), the next bytes from the upstream: emits every frame that is
 * complete, scrubbed. 0; PX_EPARSE when the bytes are not frames it may relay (px_wsscrub_why
 * says why); PX_ENOMEM; or emit's negative value. After a failure the rewriter is unusable. */
int px_wsscrub_feed(px_wsscrub_t *w, const char *data, size_t len, px_wsscrub_emit_cb emit,
                    void *arg);

/* After PX_EPARSE: what was wrong (static text). */
const char *px_wsscrub_why(const px_wsscrub_t *w);

/* Replacements since the last px_wsscrub_take_counts, one count per item of m (borrowed from
 * w; valid until the next call on w), and their total in *total. A caller logs them after a
 * feed that made some ("[scrubbed: N names]", addon_scrub_describe), then takes them. */
const uint64_t *px_wsscrub_counts(const px_wsscrub_t *w, uint64_t *total);
/* Zeroes those counts. */
void px_wsscrub_take_counts(px_wsscrub_t *w);

#endif
