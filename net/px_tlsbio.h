/* The byte path between an SSL and its socket, in place of two memory BIOs: received
 * ciphertext is read by OpenSSL straight from the caller's buffer (lent for one call; only the
 * unread rest, a partial record, is copied and kept), and the records OpenSSL writes collect in
 * one buffer that is handed to the socket whole (taken, not copied). A memory BIO costs a copy
 * each way, a zeroed grow, and a compaction of what is left on every write. */
#ifndef PX_TLSBIO_H
#define PX_TLSBIO_H

#include <openssl/ssl.h>
#include <stddef.h>

/* Received ciphertext kept for a later call (a partial record, or bytes the owner does not read
 * now): past this, px_tlsbio_feed and px_tlsbio_keep fail. A reader stops its socket when it
 * stops reading, so this holds what one or two socket reads bring. */
#define PX_TLSBIO_IN_MAX (4 * 1024 * 1024)

typedef struct px_tlsbio {
    const char *lent; /* received bytes borrowed for the current call, not yet read */
    size_t lent_len;
    char *in; /* received bytes kept: in[in_off..in_len) not yet read */
    size_t in_off, in_len, in_cap;
    char *out; /* records written, not yet taken */
    size_t out_len, out_cap;
} px_tlsbio_t;

/* Makes one BIO over b (zero-initialized, kept until the SSL is freed) and gives it to ssl as
 * both its read and its write BIO. Returns 0 or PX_ENOMEM. */
int px_tlsbio_attach(px_tlsbio_t *b, SSL *ssl);

/* Adds received bytes, copied, after those kept. Returns 0 or PX_ENOMEM/PX_ETOOBIG. */
int px_tlsbio_feed(px_tlsbio_t *b, const char *data, size_t len);

/* Lends received bytes (borrowed until px_tlsbio_keep, read after those kept). One lend at a
 * time. */
void px_tlsbio_lend(px_tlsbio_t *b, const char *data, size_t len);

/* Ends the lend: copies what OpenSSL did not read of it. Returns 0 or PX_ENOMEM/PX_ETOOBIG. */
int px_tlsbio_keep(px_tlsbio_t *b);

/* Room for more bytes of records (before a write whose size is known: one allocation). Returns
 * 0 or PX_ENOMEM. */
int px_tlsbio_reserve(px_tlsbio_t *b, size_t more);

/* The records written so far as a malloc'd buffer the caller takes (free), or NULL. */
char *px_tlsbio_take(px_tlsbio_t *b, size_t *len);

/* Frees the buffers that hold nothing (an idle connection keeps none). */
void px_tlsbio_trim(px_tlsbio_t *b);

/* Frees what b holds (after SSL_free). */
void px_tlsbio_free(px_tlsbio_t *b);

#endif
