/* Base64 (RFC 4648) as credentials carry it: the standard alphabet with padding, decoded
 * strictly (an "Authorization: Basic" value, a node ID), and one character's value in either
 * alphabet for decoders of other shapes. */
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

/* Standard alphabet, padded. The encoded length, or -1 when it does not fit in cap. */
long px_b64_encode(const unsigned char *s, size_t len, char *out, size_t cap);

#endif
