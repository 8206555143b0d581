/* SigV4A (AWS4-ECDSA-P256-SHA256): key derivation, ECDSA signing and verification.
 *
 * Key derivation is AWS's (aws-c-auth key_derivation.c): NIST SP 800-108 counter-mode KDF,
 * one HMAC-SHA256 block, key "AWS4A"+secret, input 00000001 || "AWS4-ECDSA-P256-SHA256" || 00
 * || access key id || counter byte || 00000100; the first candidate k <= n-2 gives d = k+1.
 * Signatures are lower-case hex of the DER ECDSA signature (SEQUENCE{r, s}), <= 144 chars. */
#ifndef SIG_V4A_H
#define SIG_V4A_H

#include <stddef.h>

#include <openssl/types.h>

#include "signing/sig.h"

#define SIG_V4A_COUNTER_MAX 254 /* KDF attempts before giving up */

/* Derives the P-256 key pair of (access key id, secret). Returns 0 and a new EVP_PKEY in *out
 * (taken by the caller: EVP_PKEY_free), PX_ETOOBIG for ids/secrets over 1 KiB, PX_ESIGNING
 * when all counters fail (never seen in practice), PX_ECRYPTO / PX_ENOMEM. */
int sig_v4a_derive_key(sig_str_t access_key_id, sig_str_t secret, EVP_PKEY **out);

/* Signs sts (SHA-256, ECDSA, randomized) and writes lower-case DER hex (no NUL) to hex, cap
 * >= SIG_V4A_SIG_MAX; sets *hex_len. Borrows key. Returns 0 or PX_ECRYPTO. */
int sig_v4a_sign(EVP_PKEY *key, const char *sts, size_t len, char *hex, size_t cap,
                 size_t *hex_len);

/* Verifies a hex DER signature over sts; trailing '*' padding is ignored. Returns 0 when
 * valid, PX_ESIGNING when not, PX_EPARSE when sig is not hex of a plausible length. */
int sig_v4a_verify(EVP_PKEY *key, const char *sts, size_t len, const char *sig, size_t sig_len);

/* Builds a public P-256 key from its affine coordinates (32 bytes big-endian each). Returns 0
 * and a new EVP_PKEY (taken by the caller), PX_ECRYPTO when the point is not on the curve. */
int sig_v4a_pubkey_from_xy(const unsigned char x[32], const unsigned char y[32], EVP_PKEY **out);

/* Writes the public key coordinates of key (32 bytes each). Returns 0 or PX_ECRYPTO. */
int sig_v4a_pubkey_xy(EVP_PKEY *key, unsigned char x[32], unsigned char y[32]);

/* Writes the private scalar d of key (32 bytes, big-endian); for known-answer tests only.
 * Returns 0 or PX_ECRYPTO. */
int sig_v4a_private_bytes(EVP_PKEY *key, unsigned char d[32]);

#endif
