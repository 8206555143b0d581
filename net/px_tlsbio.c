#include "net/px_tlsbio.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/px_err.h"
#include "base/px_grow.h"

#define PX__TLSBIO_IN_FIRST 4096 /* a partial record's first allocation */
/* small: a TLS 1.3 server keeps its session tickets (~0.5 KiB) here until the first response
 * takes them along; a large write reserves its records' room in one go (px_tlsbio_reserve) */
#define PX__TLSBIO_OUT_FIRST 1024

static BIO_METHOD *px__bio_method;
static pthread_once_t px__bio_once = PTHREAD_ONCE_INIT;

/* Hands OpenSSL up to want bytes: the kept ones first, then the lent ones. Nothing there is a
 * retryable read (SSL_ERROR_WANT_READ), as with a memory BIO whose eof return is -1. */
static int on_bio_read(BIO *bio, char *dst, int want)
{
    px_tlsbio_t *b = BIO_get_data(bio);
    BIO_clear_retry_flags(bio);
    if (want <= 0)
        return 0;
    size_t cap = (size_t)want, n = 0;
    if (b->in_off < b->in_len) {
        size_t k = b->in_len - b->in_off < cap ? b->in_len - b->in_off : cap;
        memcpy(dst, b->in + b->in_off, k);
        b->in_off += k;
        n = k;
        if (b->in_off == b->in_len)
            b->in_off = b->in_len = 0;
    }
    if (n < cap && b->lent_len > 0) {
        size_t k = b->lent_len < cap - n ? b->lent_len : cap - n;
        memcpy(dst + n, b->lent, k);
        b->lent += k;
        b->lent_len -= k;
        n += k;
    }
    if (n == 0) {
        BIO_set_retry_read(bio);
        return -1;
    }
    return (int)n;
}

static int on_bio_write(BIO *bio, const char *src, int len)
{
    px_tlsbio_t *b = BIO_get_data(bio);
    BIO_clear_retry_flags(bio);
    if (len <= 0)
        return 0;
    /* no cap of its own: what is written is what the owner wrote, which PX_WQ_HIGH bounds */
    if ((size_t)len > SIZE_MAX - b->out_len ||
        px_grow(&b->out, &b->out_cap, b->out_len + (size_t)len, 1, PX__TLSBIO_OUT_FIRST,
                SIZE_MAX) != 0)
        return -1;
    memcpy(b->out + b->out_len, src, (size_t)len);
    b->out_len += (size_t)len;
    return len;
}

/* The controls OpenSSL sends a stream BIO: a flush after each flight (nothing to do here: the
 * socket sends what px_tlsbio_take hands it) and the byte counts; the others (kTLS, DTLS)
 * answer 0, "not supported". One BIO serves both directions (SSL_set_bio(ssl, bio, bio)): one
 * BIO object and its lock per connection instead of two (issue 34's idle memory). */
static long on_bio_ctrl(BIO *bio, int cmd, long num, void *ptr)
{
    (void)num, (void)ptr;
    const px_tlsbio_t *b = BIO_get_data(bio);
    if (cmd == BIO_CTRL_FLUSH)
        return 1;
    if (cmd == BIO_CTRL_PENDING)
        return (long)(b->in_len - b->in_off + b->lent_len);
    if (cmd == BIO_CTRL_WPENDING)
        return (long)b->out_len;
    return 0;
}

static int on_bio_create(BIO *bio)
{
    BIO_set_init(bio, 1);
    return 1;
}

static void px__bio_method_init(void)
{
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "airlock");
    if (m == NULL || BIO_meth_set_read(m, on_bio_read) != 1 ||
        BIO_meth_set_write(m, on_bio_write) != 1 || BIO_meth_set_ctrl(m, on_bio_ctrl) != 1 ||
        BIO_meth_set_create(m, on_bio_create) != 1) {
        BIO_meth_free(m);
        return;
    }
    px__bio_method = m;
}

int px_tlsbio_attach(px_tlsbio_t *b, SSL *ssl)
{
    pthread_once(&px__bio_once, px__bio_method_init); /* loops make SSLs at once */
    if (px__bio_method == NULL)
        return PX_ENOMEM;
    BIO *bio = BIO_new(px__bio_method);
    if (bio == NULL)
        return PX_ENOMEM;
    BIO_set_data(bio, b);
    SSL_set_bio(ssl, bio, bio); /* one reference, the SSL's: it frees the BIO */
    return 0;
}

/* Room for len more kept bytes: the unread ones move to the front first. */
static int px__tlsbio_in_room(px_tlsbio_t *b, size_t len)
{
    if (b->in_off > 0) {
        memmove(b->in, b->in + b->in_off, b->in_len - b->in_off);
        b->in_len -= b->in_off;
        b->in_off = 0;
    }
    if (len > PX_TLSBIO_IN_MAX - b->in_len)
        return PX_ETOOBIG;
    return px_grow(&b->in, &b->in_cap, b->in_len + len, 1, PX__TLSBIO_IN_FIRST, PX_TLSBIO_IN_MAX);
}

int px_tlsbio_feed(px_tlsbio_t *b, const char *data, size_t len)
{
    if (len == 0)
        return 0;
    int rc = px__tlsbio_in_room(b, len);
    if (rc != 0)
        return rc;
    memcpy(b->in + b->in_len, data, len);
    b->in_len += len;
    return 0;
}

void px_tlsbio_lend(px_tlsbio_t *b, const char *data, size_t len)
{
    b->lent = data;
    b->lent_len = len;
}

int px_tlsbio_keep(px_tlsbio_t *b)
{
    const char *rest = b->lent;
    size_t n = b->lent_len;
    b->lent = NULL;
    b->lent_len = 0;
    return px_tlsbio_feed(b, rest, n);
}

int px_tlsbio_reserve(px_tlsbio_t *b, size_t more)
{
    if (more > SIZE_MAX - b->out_len)
        return PX_ENOMEM;
    return px_grow(&b->out, &b->out_cap, b->out_len + more, 1, PX__TLSBIO_OUT_FIRST, SIZE_MAX);
}

char *px_tlsbio_take(px_tlsbio_t *b, size_t *len)
{
    if (b->out_len == 0)
        return NULL;
    char *out = b->out;
    *len = b->out_len;
    b->out = NULL;
    b->out_len = b->out_cap = 0;
    return out;
}

void px_tlsbio_trim(px_tlsbio_t *b)
{
    if (b->in_off == b->in_len && b->in != NULL) {
        free(b->in);
        b->in = NULL;
        b->in_off = b->in_len = b->in_cap = 0;
    }
    if (b->out_len == 0 && b->out != NULL) {
        free(b->out);
        b->out = NULL;
        b->out_cap = 0;
    }
}

void px_tlsbio_free(px_tlsbio_t *b)
{
    free(b->in);
    free(b->out);
    memset(b, 0, sizeof(*b));
}
