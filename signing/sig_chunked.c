#include "signing/sig_chunked.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "base/px_err.h"
#include "signing/sig_encode.h"
#include "signing/sig_v4.h"
#include "signing/sig_v4a.h"

#define SIG__SIZE_DIGITS_MAX 16 /* hex digits of a chunk size */
#define SIG__CHUNK_SIG_KEY ";chunk-signature="
#define SIG__TRAILER_SIG_KEY "x-amz-trailer-signature"

enum sig__state {
    SIG__ST_LINE,         /* reading a chunk header line */
    SIG__ST_DATA,         /* reading chunk data */
    SIG__ST_DATA_CR,      /* CR after chunk data */
    SIG__ST_DATA_LF,      /* LF after chunk data */
    SIG__ST_FINAL_LINE,   /* no-trailer mode: the empty line that ends the body */
    SIG__ST_TRAILER_LINE, /* trailer mode: a trailer line, the signature line or a blank */
    SIG__ST_TRAILER_END,  /* trailer mode: the empty line after the trailer signature */
    SIG__ST_DONE,
    SIG__ST_ERROR
};

struct sig_chunked {
    enum sig__state state;
    int err;
    sig_alg_t alg;
    int trailer;
    size_t max_chunk;
    sig_chunked_sink_cb cb;
    void *cb_data;
    unsigned char v4_key[SIG_SHA256_LEN];
    EVP_PKEY *v4a_key;
    EVP_MD_CTX *md;
    char amz_date[SIG_AMZ_DATE_LEN];
    char scope[SIG_SCOPE_MAX];
    size_t scope_len;
    char prev[SIG_SIG_MAX]; /* previous signature, unpadded */
    size_t prev_len;
    /* current line (chunk header or trailer), without CRLF */
    char line[SIG_TRAILER_MAX];
    size_t line_len;
    int line_cr; /* the last byte seen was CR */
    /* current chunk */
    char size_text[SIG__SIZE_DIGITS_MAX];
    size_t size_text_len;
    size_t sig_width; /* width of the client's signature text, kept on output */
    size_t need;      /* data bytes still to read */
    char *data;
    size_t data_len;
    size_t data_cap;
    /* trailers, names lower-cased, stored as name NUL value NUL */
    char tbuf[SIG_TRAILER_MAX];
    size_t tbuf_len;
    sig_header_t trailers[SIG_TRAILERS_MAX];
    size_t ntrailers;
    int saw_blank; /* an empty line came right after the final chunk */
};

static int sig__fail(sig_chunked_t *c, int rc)
{
    if (c->state != SIG__ST_ERROR) {
        c->state = SIG__ST_ERROR;
        c->err = rc;
    }
    return c->err;
}

static int sig__emit(sig_chunked_t *c, const char *buf, size_t len)
{
    int rc;

    if (len == 0) {
        return 0;
    }
    rc = c->cb(c->cb_data, buf, len);
    return rc < 0 ? sig__fail(c, rc) : 0;
}

int sig_chunked_new(const sig_chunked_config_t *cfg, sig_chunked_sink_cb cb, void *data,
                    sig_chunked_t **out)
{
    sig_chunked_t *c;

    *out = NULL;
    if (cb == NULL || (cfg->alg != SIG_ALG_V4 && cfg->alg != SIG_ALG_V4A) ||
        !(cfg->amz_date.len == SIG_AMZ_DATE_LEN) || cfg->scope.len == 0 ||
        cfg->scope.len > SIG_SCOPE_MAX || cfg->seed.len == 0 || cfg->seed.len > SIG_SIG_MAX ||
        (cfg->alg == SIG_ALG_V4 && cfg->v4_key == NULL) ||
        (cfg->alg == SIG_ALG_V4A && cfg->v4a_key == NULL)) {
        return PX_EPARSE;
    }
    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return PX_ENOMEM;
    }
    c->md = EVP_MD_CTX_new();
    if (c->md == NULL) {
        free(c);
        return PX_ENOMEM;
    }
    c->alg = cfg->alg;
    c->trailer = cfg->trailer != 0;
    c->max_chunk = cfg->max_chunk != 0 ? cfg->max_chunk : SIG_CHUNK_MAX;
    c->cb = cb;
    c->cb_data = data;
    if (cfg->alg == SIG_ALG_V4) {
        memcpy(c->v4_key, cfg->v4_key, sizeof(c->v4_key));
    } else {
        EVP_PKEY_up_ref(cfg->v4a_key);
        c->v4a_key = cfg->v4a_key;
    }
    memcpy(c->amz_date, cfg->amz_date.base, SIG_AMZ_DATE_LEN);
    memcpy(c->scope, cfg->scope.base, cfg->scope.len);
    c->scope_len = cfg->scope.len;
    memcpy(c->prev, cfg->seed.base, cfg->seed.len);
    c->prev_len = cfg->seed.len;
    c->state = SIG__ST_LINE;
    *out = c;
    return 0;
}

void sig_chunked_free(sig_chunked_t *c)
{
    if (c == NULL) {
        return;
    }
    EVP_MD_CTX_free(c->md);
    EVP_PKEY_free(c->v4a_key);
    if (c->data != NULL) {
        OPENSSL_cleanse(c->data, c->data_cap);
        free(c->data);
    }
    OPENSSL_cleanse(c, sizeof(*c));
    free(c);
}

int sig_chunked_done(const sig_chunked_t *c)
{
    return c->state == SIG__ST_DONE;
}

/* Signs "label, date, scope, prev, [empty hash,] hash" and writes the signature, padded
 * with '*' to the client's width, into out; the unpadded signature becomes prev. */
static int sig__sign(sig_chunked_t *c, const char *label, int with_empty,
                     const char hash_hex[SIG_SHA256_HEX_LEN], char *out)
{
    char stack[512];
    sig_buf_t sts;
    char sig[SIG_SIG_MAX];
    size_t sig_len = 0;
    sig_str_t date = {c->amz_date, SIG_AMZ_DATE_LEN};
    sig_str_t scope = {c->scope, c->scope_len};
    int rc;
    int tries;

    sig_buf_init(&sts, stack, sizeof(stack), sizeof(stack));
    sig_buf_adds(&sts, label);
    sig_buf_addc(&sts, '\n');
    sig_buf_add(&sts, date.base, date.len);
    sig_buf_addc(&sts, '\n');
    sig_buf_add(&sts, scope.base, scope.len);
    sig_buf_addc(&sts, '\n');
    sig_buf_add(&sts, c->prev, c->prev_len);
    sig_buf_addc(&sts, '\n');
    if (with_empty) {
        sig_buf_adds(&sts, SIG_EMPTY_SHA256 "\n");
    }
    rc = sig_buf_add(&sts, hash_hex, SIG_SHA256_HEX_LEN);
    if (rc != 0) {
        return PX_ESIGNING;
    }
    if (c->alg == SIG_ALG_V4) {
        rc = sig_v4_signature(c->v4_key, sts.base, sts.len, sig);
        sig_len = SIG_V4_SIG_LEN;
    } else {
        /* ECDSA is randomized: sign again until the DER fits the client's width (hopeless
         * below SIG_V4A_MIN_WIDTH, where a fit has odds of about 2^-16 per try). */
        rc = PX_ESIGNING;
        for (tries = 0; tries < SIG_V4A_SIGN_TRIES && c->sig_width >= SIG_V4A_MIN_WIDTH; tries++) {
            rc = sig_v4a_sign(c->v4a_key, sts.base, sts.len, sig, sizeof(sig), &sig_len);
            if (rc != 0 || sig_len <= c->sig_width) {
                break;
            }
            rc = PX_ESIGNING;
        }
    }
    if (rc != 0) {
        return rc;
    }
    memcpy(out, sig, sig_len);
    memset(out + sig_len, '*', c->sig_width - sig_len);
    memcpy(c->prev, sig, sig_len);
    c->prev_len = sig_len;
    return 0;
}

/* Validates a client signature text; sets sig_width. */
static int sig__check_sig(sig_chunked_t *c, const char *s, size_t len)
{
    size_t hex = 0;
    size_t i;

    while (hex < len && ((s[hex] >= '0' && s[hex] <= '9') || (s[hex] >= 'a' && s[hex] <= 'f'))) {
        hex++;
    }
    for (i = hex; i < len; i++) {
        if (s[i] != '*') {
            return PX_EPARSE;
        }
    }
    if (c->alg == SIG_ALG_V4 ? (len != SIG_V4_SIG_LEN || hex != len)
                             : (len > SIG_V4A_SIG_MAX || hex < 16 || hex % 2 != 0)) {
        return PX_EPARSE;
    }
    c->sig_width = len;
    return 0;
}

/* Emits "size;chunk-signature=sig\r\n" for the current chunk, signing hash_hex. */
static int sig__emit_chunk_header(sig_chunked_t *c, const char hash_hex[SIG_SHA256_HEX_LEN])
{
    char hdr[SIG_CHUNK_LINE_MAX];
    size_t n = 0;
    int rc;

    memcpy(hdr, c->size_text, c->size_text_len);
    n = c->size_text_len;
    memcpy(hdr + n, SIG__CHUNK_SIG_KEY, sizeof(SIG__CHUNK_SIG_KEY) - 1);
    n += sizeof(SIG__CHUNK_SIG_KEY) - 1;
    rc = sig__sign(c, c->alg == SIG_ALG_V4 ? SIG_LABEL_V4_PAYLOAD : SIG_LABEL_V4A_PAYLOAD, 1,
                   hash_hex, hdr + n);
    if (rc != 0) {
        return sig__fail(c, rc);
    }
    n += c->sig_width;
    hdr[n++] = '\r';
    hdr[n++] = '\n';
    return sig__emit(c, hdr, n);
}

static int sig__hexdigit(char ch)
{
    if (ch >= '0' && ch <= '9') {
        return ch - '0';
    }
    if (ch >= 'a' && ch <= 'f') {
        return ch - 'a' + 10;
    }
    if (ch >= 'A' && ch <= 'F') {
        return ch - 'A' + 10;
    }
    return -1;
}

/* A complete chunk header line: "hex;chunk-signature=sig". */
static int sig__on_chunk_line(sig_chunked_t *c)
{
    const char *l = c->line;
    size_t len = c->line_len;
    size_t keylen = sizeof(SIG__CHUNK_SIG_KEY) - 1;
    size_t i = 0;
    size_t size = 0;
    int rc;

    while (i < len && sig__hexdigit(l[i]) >= 0) {
        if (i == SIG__SIZE_DIGITS_MAX) {
            return sig__fail(c, PX_EPARSE);
        }
        if (size > (c->max_chunk >> 4)) {
            return sig__fail(c, PX_ETOOBIG);
        }
        size = size << 4 | (size_t)sig__hexdigit(l[i]);
        i++;
    }
    if (i == 0 || len - i < keylen || memcmp(l + i, SIG__CHUNK_SIG_KEY, keylen) != 0) {
        return sig__fail(c, PX_EPARSE);
    }
    if (size > c->max_chunk) {
        return sig__fail(c, PX_ETOOBIG);
    }
    memcpy(c->size_text, l, i);
    c->size_text_len = i;
    rc = sig__check_sig(c, l + i + keylen, len - i - keylen);
    if (rc != 0) {
        return sig__fail(c, rc);
    }
    if (size == 0) {
        c->state = c->trailer ? SIG__ST_TRAILER_LINE : SIG__ST_FINAL_LINE;
        return sig__emit_chunk_header(c, SIG_EMPTY_SHA256);
    }
    if (size > c->data_cap) {
        char *p = malloc(size);

        if (p == NULL) {
            return sig__fail(c, PX_ENOMEM);
        }
        if (c->data != NULL) {
            OPENSSL_cleanse(c->data, c->data_cap);
            free(c->data);
        }
        c->data = p;
        c->data_cap = size;
    }
    if (EVP_DigestInit_ex(c->md, EVP_sha256(), NULL) != 1) {
        return sig__fail(c, PX_ECRYPTO);
    }
    c->need = size;
    c->data_len = 0;
    c->state = SIG__ST_DATA;
    return 0;
}

/* The data of the current chunk and its CRLF are complete. */
static int sig__on_chunk_end(sig_chunked_t *c)
{
    unsigned char md[SIG_SHA256_LEN];
    char hex[SIG_SHA256_HEX_LEN];
    unsigned int n = 0;
    int rc;

    if (EVP_DigestFinal_ex(c->md, md, &n) != 1) {
        return sig__fail(c, PX_ECRYPTO);
    }
    sig_hex_encode(md, sizeof(md), hex);
    c->state = SIG__ST_LINE;
    rc = sig__emit_chunk_header(c, hex);
    if (rc == 0) {
        rc = sig__emit(c, c->data, c->data_len);
    }
    if (rc == 0) {
        rc = sig__emit(c, "\r\n", 2);
    }
    return rc;
}

/* The trailer signature line: sign the canonical trailers and emit the line with the new
 * signature in place of the old one (name, colon and whitespace as the client sent them). */
static int sig__on_trailer_sig(sig_chunked_t *c, size_t vb, size_t ve)
{
    char stack[SIG_TRAILER_MAX + 64];
    char hex[SIG_SHA256_HEX_LEN];
    char sig[SIG_SIG_MAX];
    sig_names_t names;
    sig_buf_t canon;
    size_t i;
    int rc;

    rc = sig__check_sig(c, c->line + vb, ve - vb);
    if (rc != 0) {
        return sig__fail(c, rc);
    }
    names.n = 0;
    for (i = 0; i < c->ntrailers && rc == 0; i++) {
        rc = sig_names_add(&names, c->trailers[i].name);
    }
    sig_buf_init(&canon, stack, sizeof(stack), sizeof(stack));
    if (rc == 0) {
        rc = sig_canonical_headers(&canon, c->trailers, c->ntrailers, &names, (sig_str_t){NULL, 0});
    }
    if (rc == 0) {
        rc = sig_sha256_hex(canon.base, canon.len, hex);
    }
    if (rc == 0) {
        rc = sig__sign(c, c->alg == SIG_ALG_V4 ? SIG_LABEL_V4_TRAILER : SIG_LABEL_V4A_TRAILER, 0,
                       hex, sig);
    }
    if (rc != 0) {
        return sig__fail(c, rc);
    }
    c->state = SIG__ST_TRAILER_END;
    rc = sig__emit(c, c->line, vb);
    if (rc == 0) {
        rc = sig__emit(c, sig, c->sig_width);
    }
    if (rc == 0) {
        rc = sig__emit(c, c->line + ve, c->line_len - ve);
    }
    return rc == 0 ? sig__emit(c, "\r\n", 2) : rc;
}

/* One complete line in trailer mode, after the final chunk. */
static int sig__on_trailer_line(sig_chunked_t *c)
{
    const char *l = c->line;
    size_t len = c->line_len;
    const char *colon = len > 0 ? memchr(l, ':', len) : NULL;
    size_t nlen;
    size_t vb;
    size_t i;
    char *dst;
    int rc;

    if (len == 0) {
        if (c->ntrailers > 0 || c->saw_blank) {
            return sig__fail(c, PX_EPARSE); /* trailers without a signature, or two blanks */
        }
        c->saw_blank = 1;
        return sig__emit(c, "\r\n", 2);
    }
    if (colon == NULL || colon == l) {
        return sig__fail(c, PX_EPARSE);
    }
    nlen = (size_t)(colon - l);
    for (i = 0; i < nlen; i++) {
        unsigned char ch = (unsigned char)l[i];

        if (ch <= 0x20 || ch >= 0x7f || strchr("\"(),/:;<=>?@[\\]{}", ch) != NULL) {
            return sig__fail(c, PX_EPARSE);
        }
    }
    vb = nlen + 1;
    if (sig_str_ieq(l, nlen, SIG__TRAILER_SIG_KEY)) {
        size_t ve = len;

        while (vb < ve && (l[vb] == ' ' || l[vb] == '\t')) {
            vb++;
        }
        while (ve > vb && (l[ve - 1] == ' ' || l[ve - 1] == '\t')) {
            ve--;
        }
        return sig__on_trailer_sig(c, vb, ve);
    }
    if (c->ntrailers == SIG_TRAILERS_MAX || len + 2 > sizeof(c->tbuf) - c->tbuf_len) {
        return sig__fail(c, PX_ETOOBIG);
    }
    rc = sig__emit(c, l, len);
    if (rc == 0) {
        rc = sig__emit(c, "\r\n", 2);
    }
    if (rc != 0) {
        return rc;
    }
    dst = c->tbuf + c->tbuf_len;
    for (i = 0; i < nlen; i++) {
        char ch = l[i];

        dst[i] = (ch >= 'A' && ch <= 'Z') ? (char)(ch + ('a' - 'A')) : ch;
    }
    memcpy(dst + nlen, l + nlen + 1, len - nlen - 1);
    c->trailers[c->ntrailers].name.base = dst;
    c->trailers[c->ntrailers].name.len = nlen;
    c->trailers[c->ntrailers].value.base = dst + nlen;
    c->trailers[c->ntrailers].value.len = len - nlen - 1;
    c->ntrailers++;
    c->tbuf_len += len - 1;
    return 0;
}

/* Accumulates a CRLF-terminated line; returns 1 when c->line holds a complete one. */
static int sig__line_byte(sig_chunked_t *c, char ch, size_t max, int too_long, int *rc)
{
    *rc = 0;
    if (c->line_cr) {
        c->line_cr = 0;
        if (ch != '\n') {
            *rc = sig__fail(c, PX_EPARSE); /* bare CR */
            return 0;
        }
        return 1;
    }
    if (ch == '\r') {
        c->line_cr = 1;
        return 0;
    }
    if (ch == '\n') {
        *rc = sig__fail(c, PX_EPARSE); /* bare LF */
        return 0;
    }
    if (c->line_len >= max) {
        *rc = sig__fail(c, too_long);
        return 0;
    }
    c->line[c->line_len++] = ch;
    return 0;
}

int sig_chunked_feed(sig_chunked_t *c, const char *buf, size_t len)
{
    size_t i = 0;
    int rc = 0;

    while (i < len) {
        switch (c->state) {
        case SIG__ST_DATA: {
            size_t n = len - i < c->need ? len - i : c->need;

            if (EVP_DigestUpdate(c->md, buf + i, n) != 1) {
                return sig__fail(c, PX_ECRYPTO);
            }
            memcpy(c->data + c->data_len, buf + i, n);
            c->data_len += n;
            c->need -= n;
            i += n;
            if (c->need == 0) {
                c->state = SIG__ST_DATA_CR;
            }
            break;
        }
        case SIG__ST_DATA_CR:
            if (buf[i++] != '\r') {
                return sig__fail(c, PX_EPARSE);
            }
            c->state = SIG__ST_DATA_LF;
            break;
        case SIG__ST_DATA_LF:
            if (buf[i++] != '\n') {
                return sig__fail(c, PX_EPARSE);
            }
            rc = sig__on_chunk_end(c);
            break;
        case SIG__ST_LINE:
            if (sig__line_byte(c, buf[i++], SIG_CHUNK_LINE_MAX - 2, PX_EPARSE, &rc)) {
                rc = sig__on_chunk_line(c);
                c->line_len = 0;
            }
            break;
        case SIG__ST_FINAL_LINE:
        case SIG__ST_TRAILER_END:
            if (sig__line_byte(c, buf[i++], 0, PX_EPARSE, &rc)) {
                c->state = SIG__ST_DONE;
                rc = sig__emit(c, "\r\n", 2);
            }
            break;
        case SIG__ST_TRAILER_LINE:
            if (sig__line_byte(c, buf[i++], sizeof(c->line), PX_ETOOBIG, &rc)) {
                rc = sig__on_trailer_line(c);
                c->line_len = 0;
            }
            break;
        case SIG__ST_DONE:
            return sig__fail(c, PX_EPARSE);
        case SIG__ST_ERROR:
            return c->err;
        }
        if (rc != 0) {
            return sig__fail(c, rc);
        }
    }
    return c->state == SIG__ST_ERROR ? c->err : 0;
}

int sig_chunked_finish(sig_chunked_t *c)
{
    if (c->state == SIG__ST_ERROR) {
        return c->err;
    }
    if (c->state == SIG__ST_DONE) {
        return 0;
    }
    /* Trailer mode with no trailers at all: "0;chunk-signature=...\r\n\r\n" ended the body. */
    if (c->state == SIG__ST_TRAILER_LINE && c->saw_blank && c->ntrailers == 0 && c->line_len == 0 &&
        !c->line_cr) {
        c->state = SIG__ST_DONE;
        return 0;
    }
    return sig__fail(c, PX_EPARSE);
}
