/* The credential replacement map, /replacements.json (docs/replacements.md): loading, validation,
 * accessors and the `airlock check` description.
 *
 * The file (JSON, or YAML read by addon_yaml) is a mapping keyed by the surrogate string the
 * agent holds. An entry without "type" is a masked secret {value | value_from, scopes, headers,
 * allow_foreign_credentials?, allow_plain_http?}; value_from names where the real value is read
 * at each load instead ({"env": NAME} of airlock's environment, {"file": "/abs/path"} with one
 * trailing newline stripped; {"aws_secrets_manager": ...} and {"aws_ssm": ...} asked of the
 * proxy's store of fetched values, addon_awssecret.h);
 * "type": "aws-sigv4" is an AWS credential
 * {access_key_id, secret_access_key, session_token?, surrogate_session_token?, scopes,
 * allow_plain_http?} keyed by the surrogate
 * access key id; "github-app" is a GitHub App credential {app_id, private_key, installation_id,
 * base_url?, scopes, permissions?, repositories?, allow_foreign_credentials?} keyed by its
 * ghs_ surrogate (addon_ghapp.h). Any other type is refused. Entries keep file order, which
 * is the order the masked-secret pass applies them in: when one surrogate is a substring of a
 * later one, the earlier entry replaces first and the later surrogate no longer matches (list
 * longer surrogates first; `airlock check` points such pairs out).
 *
 * A loaded map is an immutable snapshot with a reference count, swapped on SIGHUP together with
 * the allowlist; a request keeps (ref) the snapshot it started with. Error messages are
 * "name:line:col: message" and never hold a real value (value, secret_access_key,
 * session_token, ...): only key names, types and positions. Real values are wiped
 * (OPENSSL_cleanse) when the snapshot is freed.
 *
 * A top-level key "canaries" whose value is a sequence (not a mapping: that is a surrogate
 * spelled "canaries") lists canaries, [{"name": "ssh-marker", "value": "..."}]: strings planted
 * in the sandbox that no request may carry (addon_leak). Names are unique, 1 to 64 bytes of
 * A-Z a-z 0-9 . _ -; they are not entries and do not count in addon_replacements_count. */
#ifndef ADDON_REPLACEMENTS_H
#define ADDON_REPLACEMENTS_H

#include <stddef.h>

#include "addons/addon.h"

/* Hard caps. */
#define ADDON_REPLACEMENTS_DEFAULT_PATH "/replacements.json"
#define ADDON_REPLACEMENTS_MAX_ENTRIES 1024 /* surrogates in one file */
#define ADDON_REPLACEMENTS_MAX_PATTERNS 256 /* scopes, or header patterns, of one entry */
#define ADDON_REPLACEMENTS_MAX_STRING 8192  /* bytes of a surrogate, value, key, token, pattern */
#define ADDON_REPLACEMENTS_CANARY_NAME_MAX 64 /* bytes of a canary name */
/* bytes of a "value_from" file: a value at the string cap plus one trailing CR LF */
#define ADDON_REPLACEMENTS_FROM_FILE_MAX (ADDON_REPLACEMENTS_MAX_STRING + 2)

typedef struct addon_replacements addon_replacements_t;

typedef enum addon_replacements_kind {
    ADDON_REPLACEMENTS_NONE = 0,  /* index out of range */
    ADDON_REPLACEMENTS_MASKED,    /* masked secret: surrogate -> value in headers */
    ADDON_REPLACEMENTS_AWS_SIGV4, /* AWS credential: re-signing with the real key */
    ADDON_REPLACEMENTS_GITHUB_APP, /* GitHub App: installation tokens minted by the proxy */
} addon_replacements_kind_t;

/* An aws-sigv4 entry. Every view is borrowed from the snapshot (valid while it is held); an
 * absent or null optional field has base NULL and len 0. */
typedef struct addon_replacements_aws {
    addon_str_t surrogate_key_id;        /* the map key */
    addon_str_t access_key_id;           /* real */
    addon_str_t secret_access_key;       /* real */
    addon_str_t session_token;           /* real, optional */
    addon_str_t surrogate_session_token; /* optional; only together with session_token */
} addon_replacements_aws_t;

/* Parses a replacement map (YAML or JSON) from data[0..len) (borrowed); name (copied) is used
 * in messages. 0 and *out with one reference; or PX_EPARSE/PX_ECONFIG/PX_ETOOBIG/PX_ENOMEM with
 * "name:line:col: message" in err. Empty input, an empty document or null is an empty map. */
int addon_replacements_load_buffer(const char *name, const char *data, size_t len,
                                   addon_replacements_t **out, char *err, size_t errlen);

/* Reads the file at path (the name in messages) and parses it as addon_replacements_load_buffer;
 * also PX_ENOENT when the file does not exist (the proxy then masks nothing) and PX_EIO. The
 * read buffer and the parsed document are wiped before they are freed. */
int addon_replacements_load_file(const char *path, addon_replacements_t **out, char *err,
                                 size_t errlen);

/* A new empty map with one reference, or NULL when out of memory. name is copied. */
addon_replacements_t *addon_replacements_new_empty(const char *name);

/* Adds a reference and returns r. */
addon_replacements_t *addon_replacements_ref(addon_replacements_t *r);

/* Drops a reference; the last one wipes the real values and frees the map. NULL is allowed. */
void addon_replacements_unref(addon_replacements_t *r);

/* The name given at load (borrowed from r). */
const char *addon_replacements_name(const addon_replacements_t *r);

/* Entries in file order; r may be NULL (0). */
size_t addon_replacements_count(const addon_replacements_t *r);

/* Kind of entry i, ADDON_REPLACEMENTS_NONE when i is out of range. */
addon_replacements_kind_t addon_replacements_kind(const addon_replacements_t *r, size_t i);

/* The surrogate of entry i (borrowed from r); {NULL, 0} when out of range. */
addon_str_t addon_replacements_surrogate(const addon_replacements_t *r, size_t i);

/* Masked entry i: the real value (borrowed from r; never log it); {NULL, 0} for other kinds. */
addon_str_t addon_replacements_value(const addon_replacements_t *r, size_t i);

/* Entry i (masked or aws-sigv4): 1 when allow_plain_http is true, else 0. Without it a real
 * value (or an AWS session token) is never put into a plain-http request: the proxy answers
 * 403 instead, so the secret never crosses the network in clear. */
int addon_replacements_allow_plain_http(const addon_replacements_t *r, size_t i);

/* Masked or github-app entry i: 1 when allow_foreign_credentials is true, else 0. */
int addon_replacements_allow_foreign(const addon_replacements_t *r, size_t i);

/* Scope (host) patterns of entry i, lowercased; a plain one without its trailing dot. Pattern k
 * is borrowed from r; {NULL, 0} when out of range. */
size_t addon_replacements_scope_count(const addon_replacements_t *r, size_t i);
addon_str_t addon_replacements_scope(const addon_replacements_t *r, size_t i, size_t k);

/* Header-name patterns of masked entry i, as written (borrowed); exact is 1 when pattern k holds
 * none of "*?[]" and can therefore mark a foreign credential for stripping. */
size_t addon_replacements_header_count(const addon_replacements_t *r, size_t i);
addon_str_t addon_replacements_header(const addon_replacements_t *r, size_t i, size_t k,
                                      int *exact);

/* 1 when host (borrowed; any case, one trailing dot allowed, no port) matches one of entry i's
 * scopes with the allowlist's host rules, else 0. */
int addon_replacements_in_scope(const addon_replacements_t *r, size_t i, addon_str_t host);

/* Fills *out with aws-sigv4 entry i (views borrowed from r). 0, or PX_ENOENT when entry i is
 * out of range or not an aws-sigv4 entry. */
int addon_replacements_aws(const addon_replacements_t *r, size_t i, addon_replacements_aws_t *out);

/* github-app entry i: its app (borrowed from r, with a token cache the proxy fills), or NULL
 * for other kinds. */
struct addon_ghapp *addon_replacements_ghapp(const addon_replacements_t *r, size_t i);

/* Canaries in file order: count (r may be NULL), then canary i's name and value (borrowed from
 * r; the value is never logged); {NULL, 0} when out of range. */
size_t addon_replacements_canary_count(const addon_replacements_t *r);
addon_str_t addon_replacements_canary_name(const addon_replacements_t *r, size_t i);
addon_str_t addon_replacements_canary_value(const addon_replacements_t *r, size_t i);

/* Index of the aws-sigv4 entry keyed by the surrogate access key id akid (borrowed, exact
 * bytes), or -1. Scope is not checked: see addon_replacements_in_scope. */
int addon_replacements_find_aws(const addon_replacements_t *r, addon_str_t akid);

/* Writes the `airlock check` summary: a count line, one line per entry (shortened surrogate,
 * kind, scopes, header patterns, flags; never a real value), then notes about surrogates that
 * contain an earlier one. Each line ends with '\n'. snprintf-style: returns the full length,
 * writes at most len-1 bytes plus a NUL. r may be NULL. */
size_t addon_replacements_describe(const addon_replacements_t *r, char *buf, size_t len);

#endif
