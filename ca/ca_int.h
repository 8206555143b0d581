/* Names shared only inside ca/: the object layouts, the leaf cache and the minting helpers. */
#ifndef CA_INT_H
#define CA_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "ca/ca.h"

/* What a leaf needs from its CA after the CA is gone: immutable once built, refcounted by the
 * ca_t and by every leaf, so a leaf handed out outlives ca_free(). */
typedef struct ca__issuer {
    int refs;
    X509 *cert;             /* the CA certificate */
    EVP_PKEY *leaf_key;     /* the one leaf key (never the CA key) */
    STACK_OF(X509) * chain; /* { cert } for SSL_set1_chain() */
} ca__issuer_t;

struct ca_leaf {
    int refs;
    int cached; /* 1 while the cache holds a reference */
    ca__issuer_t *issuer;
    X509 *cert;
    ca_leaf_t *hnext; /* hash bucket chain */
    ca_leaf_t *prev;  /* LRU list, towards the most recent */
    ca_leaf_t *next;  /* LRU list, towards the least recent */
    uint64_t hash;
    size_t name_len;
    char name[CA_NAME_MAX + 1];
};

/* Hash table + doubly linked LRU list; the cache owns one reference per leaf. */
typedef struct ca__cache {
    ca_leaf_t **buckets;
    size_t mask; /* bucket count - 1 (a power of two) */
    size_t count;
    size_t cap;
    ca_leaf_t *head; /* most recently used */
    ca_leaf_t *tail; /* least recently used */
    uint64_t k0, k1; /* random SipHash key: names come from the agent */
    uint64_t hits, misses, evictions;
} ca__cache_t;

/* A parsed, normalized host name. */
typedef struct ca__name {
    char text[CA_NAME_MAX + 1];
    size_t len;
    int is_ip;
    unsigned char ip[16];
    size_t ip_len; /* 4 or 16 */
} ca__name_t;

struct ca {
    EVP_PKEY *key;          /* the CA private key */
    ca__issuer_t *issuer;   /* CA cert + leaf key, shared with the leaves */
    EVP_PKEY *leaf_pub;     /* the leaf key's public half, cheap to put in certificates */
    const EVP_MD *md;       /* SHA-256, or NULL for EdDSA CA keys */
    X509_NAME *subject;     /* the CA subject, copied once */
    X509_EXTENSION *ext_bc; /* the constant leaf extensions, encoded once */
    X509_EXTENSION *ext_ku;
    X509_EXTENSION *ext_eku;
    X509_EXTENSION *ext_aki; /* NULL when the CA has no SKI */
    ca_constraints_t *nc;    /* the certificate's name constraints; NULL when none */
    time_t not_before;       /* the CA's notBefore: no leaf starts before it (0: unknown) */
    time_t not_after;        /* the CA's notAfter: no leaf outlives it (0: unknown) */
    int generated;
    /* the cache and its counters; minting runs outside it (--workers: every loop signs with
     * the one CA and shares its leaves) */
    pthread_mutex_t mu;
    ca__cache_t cache;
};

#define CA__KEY_MODE 0600 /* mitmproxy-ca.pem: it holds the private key */

/* What ca__generate() makes: an EC P-256 CA certificate named cn, valid from
 * CA_ROOT_BACKDATE_DAYS ago to days from now, with basicConstraints bc, Name Constraints nc
 * (NULL: none), signed by issuer_key/issuer_cert (NULL: self-signed). */
typedef struct ca__gen {
    const char *cn;
    const ca_constraints_t *nc;
    long days;
    const char *bc;
    EVP_PKEY *issuer_key;
    X509 *issuer_cert;
} ca__gen_t;

/* Generates a key and the CA certificate g describes. 0, PX_ECONFIG (nc permits no DNS
 * name) or PX_ECRYPTO, err filled. */
int ca__generate(const ca__gen_t *g, EVP_PKEY **key_out, X509 **cert_out, char *err, size_t errlen);

/* File helpers of ca.c: "dir/file" into out; mkdir -p (0700); a PEM of (key if non-NULL, then)
 * cert written atomically (noreplace: an existing file wins, returning 1); the two
 * certificate-only files. 0 or a negative code with err filled. */
int ca__path_join(char *out, size_t outlen, const char *dir, const char *file, char *err,
                  size_t errlen);
int ca__mkdir_p(const char *dir, char *err, size_t errlen);
int ca__write_pem_file(const char *dir, const char *file, EVP_PKEY *key, X509 *cert, mode_t mode,
                       int noreplace, char *err, size_t errlen);
int ca__write_cert_files(const char *dir, X509 *cert, char *err, size_t errlen);

/* Prints into err (if non-NULL) like snprintf; always NUL-terminates. */
void ca__err_set(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Like ca__err_set, then appends ": <first OpenSSL reason>" and clears OpenSSL's error queue. */
void ca__err_ssl(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Sets a random positive non-zero 128-bit serial on x. 0 or PX_ECRYPTO/PX_ENOMEM. */
int ca__serial_set_random(X509 *x);

/* Parses name (len bytes, borrowed) into *out; 0 or PX_EPARSE. */
int ca__name_parse(const char *name, size_t len, ca__name_t *out);

/* Prepares ca for minting: leaf key, issuer, subject copy, constant extensions. Takes no
 * ownership; ca->key and cert must be set (cert is taken into the new issuer). */
int ca__mint_init(ca_t *ca, X509 *cert, char *err, size_t errlen);

/* Frees what ca__mint_init() built (except the issuer, released by the caller). */
void ca__mint_cleanup(ca_t *ca);

/* Mints a leaf for a parsed name; *out has one reference. 0, PX_ENOMEM or PX_ECRYPTO. */
int ca__leaf_mint(ca_t *ca, const ca__name_t *name, ca_leaf_t **out);

/* 1 when the parsed name n is within the constraints c (RFC 5280 rules), else 0. */
int ca__nc_permits(const ca_constraints_t *c, const ca__name_t *n);

/* Reads cert's Name Constraints into *out (NULL when it has none). 0, PX_EPARSE, PX_ETOOBIG or
 * PX_ENOMEM with err filled. */
int ca__nc_from_cert(X509 *cert, ca_constraints_t **out, char *err, size_t errlen);

/* Adds c as a critical Name Constraints extension to x. 0, PX_ECONFIG (c permits no DNS name,
 * which would leave DNS names unconstrained) or PX_ECRYPTO. */
int ca__nc_add_ext(X509 *x, const ca_constraints_t *c);

/* Drops one issuer reference; the last frees it. */
void ca__issuer_release(ca__issuer_t *issuer);

/* Cache life: cap entries (1..CA_CACHE_MAX_CAP). 0 or PX_ENOMEM/PX_ECRYPTO. */
int ca__cache_init(ca__cache_t *c, size_t cap);

/* Releases every cached reference and the table. */
void ca__cache_cleanup(ca__cache_t *c);

/* Keyed hash of a normalized name. */
uint64_t ca__cache_hash(const ca__cache_t *c, const char *s, size_t len);

/* The cached leaf for (name, hash) moved to most recent, borrowed; NULL on a miss. */
ca_leaf_t *ca__cache_find(ca__cache_t *c, const char *name, size_t len, uint64_t hash);

/* Inserts leaf (leaf->hash set, not cached yet) as most recent, taking a new reference, and
 * evicts the least recently used leaf when the cache is full. */
void ca__cache_insert(ca__cache_t *c, ca_leaf_t *leaf);

#endif
