/* Base64 (RFC 4648) as credentials carry it: the standard alphabet with padding, decoded
 * strictly (an "Authorization: Basic" value, a node ID), one character's value in either
 * alphabet for decoders of other shapes, and encoding in either alphabet, padded or not (a
 * JWT, a node ID). */
#ifndef PX_B64_H
#define PX_B64_H

#include <stddef.h>

/* The 6-bit value of c in the standard alphabet (url 0: '+', '/') or the URL-safe one (url 1:
 * '-', '_'); -1 when c is not in it. */
int px_b64_value(unsigned char c, int url);

/* Strict standard base64 with padding: a length that is a multiple of 4, '=' only as the last
 * one or two characters, nothing outside the alphabet. Decodes into out (cap bytes; at least
 * len / 4 * 3 are needed) and returns the decoded length, or -1. */
long px_b64_decode(const char *s, size_t len, unsigned char *out, size_t cap);

/* The two alphabets, 64 characters and a NUL: standard ('+', '/') and URL-safe ('-', '_'). */
extern const char px_b64_std[65];
extern const char px_b64_url[65];

/* Standard alphabet, padded. The encoded length, or -1 when it does not fit in cap. */
long px_b64_encode(const unsigned char *s, size_t len, char *out, size_t cap);

#define PX_B64_URL 1   /* the URL-safe alphabet */
#define PX_B64_NOPAD 2 /* no '=': the last group has 2 or 3 characters */

/* px_b64_encode with flags (PX_B64_URL, PX_B64_NOPAD; 0 is px_b64_encode). No NUL is written. */
long px_b64_encode_as(const unsigned char *s, size_t len, int flags, char *out, size_t cap);

#endif
