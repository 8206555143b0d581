/* An incremental reader of WebSocket frames (RFC 6455 section 5): the bytes of one direction
 * of a WebSocket, fed in pieces as they arrive, come out as events: a frame's header, runs of
 * its payload (still masked, as a view into the input), its end. The reader keeps no payload:
 * its whole state is a px_wsframe_t (at most 14 header bytes), whatever the frame sizes.
 *
 * It checks what an intermediary that reads the frames must rely on: no RSV bit (airlock never
 * lets an extension be negotiated), no reserved opcode, control frames unfragmented and at most
 * 125 bytes, continuation frames only inside a fragmented message and no new data message
 * inside one, the 64-bit length's top bit clear, and (when asked) every frame masked. */
#ifndef PX_WSFRAME_H
#define PX_WSFRAME_H

#include <stddef.h>
#include <stdint.h>

enum {
    PX_WSFRAME_CONT = 0x0,
    PX_WSFRAME_TEXT = 0x1,
    PX_WSFRAME_BINARY = 0x2,
    PX_WSFRAME_CLOSE = 0x8,
    PX_WSFRAME_PING = 0x9,
    PX_WSFRAME_PONG = 0xA,
};

#define PX_WSFRAME_CONTROL_MAX 125 /* a control frame's largest payload */

typedef enum px_wsframe_ev {
    PX_WSFRAME_MORE = 0, /* the input is used up: feed the next piece */
    PX_WSFRAME_HEAD,     /* a header is complete: opcode, fin, len, key are the frame's */
    PX_WSFRAME_DATA,     /* payload bytes: a view into the input, masked as on the wire */
    PX_WSFRAME_END,      /* the frame's payload is complete (right after HEAD when empty) */
} px_wsframe_ev_t;

typedef struct px_wsframe {
    /* the frame being read (valid from its HEAD event to its END) */
    int opcode;
    int fin;
    int masked;
    uint8_t key[4];
    uint64_t len;    /* payload length */
    uint64_t off;    /* payload bytes delivered so far */
    int message_end; /* a data frame with FIN: its message ends with this frame */
    const char *why; /* after an error: what was wrong (static text) */
    /* the reader */
    int need_mask;  /* every frame must be masked (client to server) */
    int in_message; /* a fragmented data message is open */
    int stage;      /* internal: header, payload, end */
    uint8_t hdr[14];
    size_t hlen;
} px_wsframe_t;

/* Starts a reader; need_mask: frames without a masking key are an error (a client's). */
void px_wsframe_init(px_wsframe_t *p, int need_mask);

/* Reads from data[0..len) (borrowed): returns the next event and in *used how many bytes it
 * took (0 for END and MORE); for DATA, *run is the payload's view (within data) and the
 * payload offset of its first byte is p->off - run length. A negative PX_EPARSE when the
 * bytes break the protocol (p->why says how); the reader is then stuck in that error. Call
 * again with the rest of the input until MORE. */
int px_wsframe_next(px_wsframe_t *p, const char *data, size_t len, size_t *used, const char **run,
                    size_t *run_len);

/* Unmasks len payload bytes from in to out (may be the same) with key, the first byte being
 * at payload offset off. */
void px_wsframe_unmask(const uint8_t key[4], uint64_t off, const char *in, char *out, size_t len);

/* 1 for close, ping and pong (opcodes 8 and up). */
static inline int px_wsframe_is_control(int opcode)
{
    return (opcode & 0x8) != 0;
}

#endif
