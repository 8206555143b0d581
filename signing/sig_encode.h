/* Byte buffers, AWS URI encoding, hex, SHA-256 and HMAC-SHA256 helpers for signing/. */
#ifndef SIG_ENCODE_H
#define SIG_ENCODE_H

#include <stddef.h>

#include "signing/sig.h"

#define SIG_SHA256_LEN 32
#define SIG_SHA256_HEX_LEN 64

/* A capped byte buffer. It starts in caller storage (often a stack array) and moves to the
 * heap when it outgrows it, never past max bytes. After a failed append, err keeps the first
 * error and every later append fails the same way, so callers may check once at the end. */
typedef struct sig_buf {
    char *base;
    size_t len;
    size_t cap;
    size_t max;
    int heap;
    int err;
} sig_buf_t;

/* Starts an empty buffer over storage (borrowed, may be NULL with size 0), capped at max. */
void sig_buf_init(sig_buf_t *b, char *storage, size_t size, size_t max);

/* Frees heap memory, if any; the buffer may be initialized again afterwards. */
void sig_buf_free(sig_buf_t *b);

/* Appends len bytes. Returns 0, PX_ETOOBIG past the cap, PX_ENOMEM. */
int sig_buf_add(sig_buf_t *b, const void *s, size_t len);

/* Appends one byte. Same returns as sig_buf_add(). */
int sig_buf_addc(sig_buf_t *b, char c);

/* Appends a NUL-terminated string. Same returns as sig_buf_add(). */
int sig_buf_adds(sig_buf_t *b, const char *s);

/* 1 when c is an RFC 3986 unreserved byte (A-Z a-z 0-9 - _ . ~), the set AWS never escapes. */
int sig_is_unreserved(unsigned char c);

/* Appends src percent-encoded the AWS way (upper-case hex, unreserved kept, '/' kept when
 * keep_slash). Returns 0 or a sig_buf_add() error. */
int sig_uri_encode(sig_buf_t *out, const char *src, size_t len, int keep_slash);

/* Appends src with every %XY decoded; '+' stays '+'. Returns 0, PX_EPARSE on a '%' not
 * followed by two hex digits, or a sig_buf_add() error. */
int sig_uri_decode(sig_buf_t *out, const char *src, size_t len);

/* Writes 2*len lower-case hex digits of in to out (no NUL). */
void sig_hex_encode(const unsigned char *in, size_t len, char *out);

/* Decodes len hex digits (either case) into out (cap bytes). Returns 0 and sets *outlen, or
 * PX_EPARSE on an odd length or a non-hex digit, PX_ETOOBIG when out is too small. */
int sig_hex_decode(const char *in, size_t len, unsigned char *out, size_t cap, size_t *outlen);

/* SHA-256 of data into out. Returns 0 or PX_ECRYPTO. */
int sig_sha256(const void *data, size_t len, unsigned char out[SIG_SHA256_LEN]);

/* Lower-case hex SHA-256 of data into out (64 chars, no NUL). Returns 0 or PX_ECRYPTO. */
int sig_sha256_hex(const void *data, size_t len, char out[SIG_SHA256_HEX_LEN]);

/* HMAC-SHA256(key, data) into out. Returns 0 or PX_ECRYPTO. */
int sig_hmac_sha256(const void *key, size_t klen, const void *data, size_t dlen,
                    unsigned char out[SIG_SHA256_LEN]);

/* HMAC chain: k1 = HMAC(key, steps[0]), k(i+1) = HMAC(ki, steps[i]); the last goes to out.
 * nsteps >= 1. Returns 0 or PX_ECRYPTO. */
int sig_hmac_chain(const sig_str_t *steps, size_t nsteps, const void *key, size_t klen,
                   unsigned char out[SIG_SHA256_LEN]);

/* Case-insensitive (ASCII) equality of a byte range and a NUL-terminated lower-case name. */
int sig_str_ieq(const char *s, size_t len, const char *lower);

/* 1 for the whitespace bytes canonicalization trims and squeezes (SP, HT, CR, LF, VT, FF). */
int sig_is_space(unsigned char c);

#endif
