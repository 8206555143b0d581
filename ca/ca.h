/* ca: airlock's certificate authority (docs/ca-trust.md).
 *
 * Loads the mitmproxy-compatible CA from a confdir (or creates one), mints one leaf certificate
 * per host name with a single per-object ECDSA P-256 key, and keeps minted leaves in an LRU
 * cache. Pure: OpenSSL's libcrypto only, no event loop. A loaded ca_t may be shared by threads
 * (`--workers`): the cache and its counters have a lock, leaf references are atomic, and the
 * state minting reads is set once by ca_load(). Errors are the PX_E* codes of base/px_err.h; a
 * caller-supplied err buffer gets a one-line message (never key material). */
#ifndef CA_H
#define CA_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

/* Hard caps and fixed parameters. */
#define CA_CACHE_DEFAULT_CAP 4096   /* leaves kept in the cache when 0 is asked for */
#define CA_CACHE_MAX_CAP (1u << 20) /* largest cache capacity accepted */
#define CA_NAME_MAX 253             /* longest host name, without the trailing dot */
#define CA_LABEL_MAX 63             /* longest DNS label */
#define CA_CN_MAX 64                /* ub-common-name: longer names get a SAN but no CN */
#define CA_PEM_MAX (256 * 1024)     /* largest mitmproxy-ca.pem read */
#define CA_PATH_MAX 4096            /* longest confdir path + file name */
#define CA_ERR_LEN 256              /* suggested size of the err buffers below */
#define CA_FINGERPRINT_LEN 96       /* "AB:CD:...:EF" SHA-256 plus NUL */
#define CA_LEAF_BACKDATE_DAYS 1     /* leaf notBefore = now - this */
#define CA_LEAF_VALID_DAYS 198      /* leaf notAfter = notBefore + this (< 200 days) */
#define CA_ROOT_BACKDATE_DAYS 2     /* generated CA notBefore = now - this */
#define CA_ROOT_VALID_DAYS 3650     /* generated CA notAfter = notBefore + this */
#define CA_CONV_DEFAULT_DAYS 7      /* a per-conversation CA's validity when none is asked for */
#define CA_CONV_MAX_DAYS 365        /* the longest one accepted */
#define CA_CONSTRAINTS_MAX 1024     /* names in one CA's name constraints */

/* File names inside the confdir, as mitmproxy writes them. */
#define CA_FILE_KEY_CERT "mitmproxy-ca.pem"      /* private key then certificate, 0600 */
#define CA_FILE_CERT_PEM "mitmproxy-ca-cert.pem" /* certificate only, 0644 */
#define CA_FILE_CERT_CER "mitmproxy-ca-cert.cer" /* same bytes as the .pem, 0644 */

/* ca_load() flags. */
enum ca_flags {
    CA_CREATE = 1 /* generate and write a CA when mitmproxy-ca.pem is absent */
};

/* What ca_init_confdir() did. */
enum ca_init_result {
    CA_INIT_EXISTED = 0, /* a valid CA was there; nothing written */
    CA_INIT_CREATED = 1, /* a new CA was generated and its three files written */
    CA_INIT_REPAIRED = 2 /* a valid CA was there; missing certificate files were rewritten */
};

typedef struct ca ca_t;
typedef struct ca_leaf ca_leaf_t;
typedef struct ca_constraints ca_constraints_t;

typedef struct ca_cache_stats {
    size_t count;       /* leaves in the cache now */
    size_t cap;         /* capacity */
    uint64_t hits;      /* ca_leaf_acquire() answered from the cache */
    uint64_t misses;    /* ca_leaf_acquire() had to mint */
    uint64_t evictions; /* leaves dropped because the cache was full */
} ca_cache_stats_t;

/* Loads confdir/mitmproxy-ca.pem (RSA or EC key, PKCS#1/SEC1/PKCS#8, then the certificate);
 * when it is absent and flags has CA_CREATE, generates an EC P-256 CA and writes the three
 * files. cache_cap 0 means CA_CACHE_DEFAULT_CAP. On success *out is a new ca_t (ca_free). */
int ca_load(ca_t **out, const char *confdir, unsigned flags, size_t cache_cap, char *err,
            size_t errlen);

/* Frees the CA, its cache and the cache's references. Leaves still held by callers stay valid
 * until their ca_leaf_release(). NULL is a no-op. */
void ca_free(ca_t *ca);

/* For `airlock ca init --confdir DIR`: creates DIR (0700) and the CA when absent, rewrites
 * missing certificate files, else only checks the CA loads; *result gets a ca_init_result.
 * Returns 0 or a PX_E* code with err filled. */
int ca_init_confdir(const char *confdir, int *result, char *err, size_t errlen);

/* 1 when ca_load() generated this CA (it was absent), else 0. */
int ca_was_generated(const ca_t *ca);

/* The CA certificate, borrowed: valid until ca_free(). */
X509 *ca_get_cert(const ca_t *ca);

/* The one leaf private key (ECDSA P-256) shared by every leaf of this CA, borrowed. */
EVP_PKEY *ca_get_leaf_key(const ca_t *ca);

/* Writes the CA certificate's SHA-256 fingerprint as "AB:CD:..." (CA_FINGERPRINT_LEN bytes
 * with the NUL). Returns 0, or PX_ETOOBIG when len is too small, PX_ECRYPTO. */
int ca_get_fingerprint(const ca_t *ca, char *buf, size_t len);

/* Normalizes name (borrowed, len bytes, no NUL needed) as leaves are keyed: IPv6 brackets and
 * one trailing dot dropped, lowercased, IPs canonical. Writes a C string to out (CA_NAME_MAX+1
 * bytes) and *is_ip (may be NULL). 0, PX_EPARSE (cannot go in a certificate) or PX_ETOOBIG. */
int ca_name_normalize(const char *name, size_t len, char *out, size_t outlen, int *is_ip);

/* Sets *out to the leaf for name (borrowed): cached, or minted and cached, evicting the least
 * recently used leaf when full. The caller owns one reference (ca_leaf_release()).
 * Returns 0, PX_EPARSE (bad name), PX_EFORBIDDEN (outside the CA's name constraints: nothing
 * is minted), PX_ENOMEM or PX_ECRYPTO. */
int ca_leaf_acquire(ca_t *ca, const char *name, size_t len, ca_leaf_t **out);

/* Mints a new leaf for name without touching the cache; *out is the caller's only reference.
 * Same returns as ca_leaf_acquire(). */
int ca_mint_leaf(ca_t *ca, const char *name, size_t len, ca_leaf_t **out);

/* Takes another reference to leaf; returns leaf. */
ca_leaf_t *ca_leaf_retain(ca_leaf_t *leaf);

/* Drops one reference; the last one frees the leaf. NULL is a no-op. */
void ca_leaf_release(ca_leaf_t *leaf);

/* The leaf certificate, borrowed while the caller holds a reference to leaf. */
X509 *ca_leaf_get_cert(const ca_leaf_t *leaf);

/* The issuing CA certificate, borrowed while the caller holds a reference to leaf. */
X509 *ca_leaf_get_ca_cert(const ca_leaf_t *leaf);

/* The leaf private key, borrowed while the caller holds a reference to leaf. */
EVP_PKEY *ca_leaf_get_key(const ca_leaf_t *leaf);

/* The chain to send after the leaf (the CA certificate alone), borrowed while the caller holds
 * a reference; suits SSL_set1_chain(), which takes its own references. */
STACK_OF(X509) * ca_leaf_get_chain(const ca_leaf_t *leaf);

/* The normalized name the leaf was minted for (NUL-terminated), borrowed like the leaf. */
const char *ca_leaf_get_name(const ca_leaf_t *leaf);

/* Copies the cache counters into *out. */
void ca_cache_get_stats(const ca_t *ca, ca_cache_stats_t *out);

/* ---- name constraints (a per-conversation CA) ----
 * A CA whose certificate carries Name Constraints signs only for the names they permit: every
 * ca_t reads them from its certificate at ca_load(), and minting refuses any other name. */

/* A new empty list of permitted names, or NULL when out of memory. */
ca_constraints_t *ca_constraints_new(void);

/* Frees c. NULL is a no-op. */
void ca_constraints_free(ca_constraints_t *c);

/* Adds the subtree an allowlist host pattern (borrowed, len bytes, normalized as the policy
 * keeps it: lowercase A-labels, no brackets) needs: "github.com" and ".github.com" permit
 * github.com and every name under it, a glob the labels right of its last glob character
 * ("*.github.com" -> github.com), an IP address that address alone (/32, /128). Names already
 * covered are not repeated. 0; PX_EPARSE when no subtree can hold the pattern ("*",
 * "10.0.0.*", "github.*") or it is no name; PX_ETOOBIG past CA_CONSTRAINTS_MAX; PX_ENOMEM;
 * err says which pattern. */
int ca_constraints_add_host(ca_constraints_t *c, const char *pattern, size_t len, char *err,
                            size_t errlen);

/* The number of subtrees in c (0 for NULL). */
size_t ca_constraints_count(const ca_constraints_t *c);

/* 1 when a leaf for name (borrowed, len bytes, any case, as ca_leaf_acquire() takes it) is
 * within c, RFC 5280 rules (excluded subtrees win; a name type without permitted subtrees is
 * unconstrained); 0 when not or when name cannot go in a certificate. c NULL permits all. */
int ca_constraints_permits(const ca_constraints_t *c, const char *name, size_t len);

/* Writes "DNS:github.com, IP:10.0.0.1/32, excluded IP:0.0.0.0/0" into buf. snprintf-style:
 * returns the full length. */
size_t ca_constraints_describe(const ca_constraints_t *c, char *buf, size_t len);

/* For `airlock ca init --per-conversation`: creates DIR (0700) and in it a new EC P-256 CA
 * valid days (1..CA_CONV_MAX_DAYS) whose critical Name Constraints permit exactly c (c must
 * hold at least one DNS name; without a permitted address, all addresses are excluded): a
 * root, written as the certificate files for agents, whose key is freed once it signed the
 * intermediate, which mitmproxy-ca.pem holds with its key. A CA already in DIR is an error
 * (PX_ECONFIG): nothing is replaced. */
int ca_init_constrained(const char *confdir, const ca_constraints_t *c, int days, char *err,
                        size_t errlen);

/* The name constraints ca's certificate carries, borrowed until ca_free(); NULL when none. */
const ca_constraints_t *ca_get_constraints(const ca_t *ca);

/* 1 when ca may mint a leaf for name (borrowed): no constraints, or name within them; 0 for a
 * NULL ca (no CA signs anything). */
int ca_name_permitted(const ca_t *ca, const char *name, size_t len);

/* Copies confdir's certificate for agents (CA_FILE_CERT_PEM: a per-conversation CA's root) into
 * dir/CA_FILE_CERT_PEM (0644, atomically, replacing), after checking it issued ca, the CA loaded
 * from confdir. Never writes a key. 0 or a PX_E* code with err filled. */
int ca_export_cert(const ca_t *ca, const char *confdir, const char *dir, char *err, size_t errlen);

/* Deletes the CA in confdir (its key file and certificate files) and confdir itself when that
 * leaves it empty. A ca_t loaded from it stays usable. 0, or PX_EIO when something stayed. */
int ca_remove_confdir(const char *confdir);

#endif
