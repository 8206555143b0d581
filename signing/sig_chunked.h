/* Incremental re-signer for aws-chunked request bodies (STREAMING-AWS4-HMAC-SHA256-PAYLOAD,
 * STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD and their -TRAILER variants).
 *
 * Fed the body in pieces of any size (one byte at a time works), it re-emits the same framing
 * through a sink with every chunk signature recomputed with the real key, chained from the
 * seed (the re-signed request's signature), and the trailer signature recomputed over the
 * canonical trailers. Each chunk is held until its data is complete (its signature comes
 * first on the wire), so memory is one chunk (<= SIG_CHUNK_MAX) plus small line buffers.
 * Signatures keep the client's width (SigV4A ones are '*'-padded to it), so the body length,
 * Content-Length and x-amz-decoded-content-length never change. Malformed framing is an
 * error, after which every call fails; the proxy then aborts the request. */
#ifndef SIG_CHUNKED_H
#define SIG_CHUNKED_H

#include <stddef.h>

#include <openssl/types.h>

#include "signing/sig.h"

typedef struct sig_chunked sig_chunked_t;

/* Receives re-signed body bytes (borrowed for the call). Returns 0, or a negative code that
 * stops the re-signer and is returned by the sig_chunked_feed() that emitted the bytes. */
typedef int (*sig_chunked_sink_cb)(void *data, const char *buf, size_t len);

typedef struct sig_chunked_config {
    sig_alg_t alg;
    int trailer;                 /* 1 for the ...-PAYLOAD-TRAILER payload types */
    sig_str_t amz_date;          /* the request's X-Amz-Date (copied) */
    sig_str_t scope;             /* the credential scope (copied) */
    sig_str_t seed;              /* the re-signed request's signature, unpadded hex (copied) */
    const unsigned char *v4_key; /* SigV4: the 32-byte signing key (copied) */
    EVP_PKEY *v4a_key;           /* SigV4A: the private key (a reference is taken) */
    size_t max_chunk;            /* largest chunk accepted; 0 = SIG_CHUNK_MAX */
} sig_chunked_config_t;

/* Creates a re-signer that writes through cb(data, ...). Returns 0 and *out (free with
 * sig_chunked_free), PX_EPARSE on a bad config, PX_ENOMEM, PX_ECRYPTO. */
int sig_chunked_new(const sig_chunked_config_t *cfg, sig_chunked_sink_cb cb, void *data,
                    sig_chunked_t **out);

/* Consumes len body bytes (borrowed); complete frames are emitted before it returns. Returns
 * 0, PX_EPARSE (bad framing, bytes after the end), PX_ETOOBIG (chunk over the cap, trailers
 * too long), PX_ECRYPTO, PX_ESIGNING, PX_ENOMEM, or the sink's error. */
int sig_chunked_feed(sig_chunked_t *c, const char *buf, size_t len);

/* Declares the end of the body. Returns 0 when it ended after a complete final frame,
 * PX_EPARSE when it was truncated, or the error that stopped the re-signer. */
int sig_chunked_finish(sig_chunked_t *c);

/* 1 once the final frame (and trailers, if any) has been emitted. */
int sig_chunked_done(const sig_chunked_t *c);

/* Frees c (NULL is fine) and forgets the key material. */
void sig_chunked_free(sig_chunked_t *c);

#endif
