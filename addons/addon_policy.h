/* The network allowlist (docs/allowlist.md): loading, the per-request decision, and descriptions.
 *
 * A loaded policy is an immutable snapshot with a reference count: SIGHUP loads a new one and
 * swaps the proxy's pointer, while each request keeps (ref) the snapshot it started with and
 * unrefs it when done. Deciding never allocates. */
#ifndef ADDON_POLICY_H
#define ADDON_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "addons/addon.h"

/* Hard caps. */
#define ADDON_POLICY_PATH_MAX (64 * 1024) /* raw path+query bytes; as the proxy's head cap */
#define ADDON_POLICY_DEFAULT_PATH "/network-allowlist.json"

/* The "message" of the 403 body when the host/path is not allowed, pre-checks too. */
#define ADDON_POLICY_MSG_HOST_PATH                                                                 \
    "This host/path is not in the network allowlist. To request access, add the host/path "        \
    "to the network allowlist (network-allowlist.yaml) and ask the user to approve the change."

/* The same when host and path would pass but the method would not; %s is the method. */
#define ADDON_POLICY_MSG_METHOD_FMT                                                                \
    "Method %s is not allowed for this URL. To request access, add the method to the "             \
    "entry's 'methods' list in the network allowlist (network-allowlist.yaml) and ask the "        \
    "user to approve the change."

/* The same when an entry matches host and path (domains: the host) but allows other ports; %u
 * is the request's port. */
#define ADDON_POLICY_MSG_PORT_FMT                                                                  \
    "Port %u is not allowed for this host. To request access, add the port to the 'ports' list "   \
    "of a url_prefixes entry for this host in the network allowlist (network-allowlist.yaml) "     \
    "and ask the user to approve the change."

/* The same for a request refused by a `block:` entry; %s names the entry (block[0] (host ...)). */
#define ADDON_POLICY_MSG_BLOCK_FMT                                                                 \
    "This request matches %s in the network allowlist's block list, which wins over every "        \
    "allow entry. To request access, ask the user to remove or narrow that block entry."

/* Hard caps. */
#define ADDON_POLICY_ENTRIES_MAX 100000 /* entries in one list (block, domains, url_prefixes) */

typedef struct addon_policy addon_policy_t;

/* The allowlist file formats (docs/policy-formats.md). */
typedef enum addon_policy_format {
    ADDON_POLICY_FORMAT_AUTO = 0,    /* detected from the content */
    ADDON_POLICY_FORMAT_NATIVE,      /* airlock's YAML/JSON */
    ADDON_POLICY_FORMAT_DOMAIN_LIST, /* one host per line, # comments, .domain = and subdomains */
    ADDON_POLICY_FORMAT_AGENTBOX,    /* an agentbox config.toml's [network] table */
} addon_policy_format_t;

typedef enum addon_policy_kind {
    ADDON_POLICY_NONE = 0,     /* no entry involved */
    ADDON_POLICY_DOMAINS,      /* domains[index] */
    ADDON_POLICY_URL_PREFIXES, /* url_prefixes[index] */
    ADDON_POLICY_BLOCKS,       /* block[index] */
} addon_policy_kind_t;

typedef enum addon_policy_verdict {
    ADDON_POLICY_ALLOW = 0,
    ADDON_POLICY_BLOCK_PRECHECK, /* the decoded path failed a pre-check */
    ADDON_POLICY_BLOCK_LISTED,   /* a block entry matches (kind ADDON_POLICY_BLOCKS, index) */
    ADDON_POLICY_BLOCK_METHOD,   /* an entry matches host, path and port, none the method */
    ADDON_POLICY_BLOCK_PORT,     /* an entry matches host and path, none the port */
    ADDON_POLICY_BLOCK_PATH,     /* an entry matches the host, none the path */
    ADDON_POLICY_BLOCK_HOST,     /* no entry matches the host */
} addon_policy_verdict_t;

typedef enum addon_policy_precheck {
    ADDON_POLICY_PRECHECK_NONE = 0,
    ADDON_POLICY_PRECHECK_NUL,         /* decoded path contains a NUL byte */
    ADDON_POLICY_PRECHECK_BACKSLASH,   /* ... a backslash */
    ADDON_POLICY_PRECHECK_DOT_SEGMENT, /* a path segment (query aside) is ".." once decoded
                                          and its ";parameters" removed */
    ADDON_POLICY_PRECHECK_TOO_LONG,    /* raw path longer than ADDON_POLICY_PATH_MAX */
} addon_policy_precheck_t;

/* One request as the policy sees it. All views are borrowed for the call. */
typedef struct addon_policy_query {
    addon_str_t method; /* as sent; compared case-insensitively */
    addon_str_t host;   /* Host header host without port; any case, one trailing dot and
                           IPv6 brackets allowed */
    addon_str_t path;   /* raw path + query as sent (percent-encoded) */
    uint16_t port;      /* destination port */
    int tls;            /* 1 on TLS: the default port is then 443 instead of 80 */
} addon_policy_query_t;

/* A url_prefixes entry's `graphql` block (docs/graphql.md): fnmatch patterns for the top-level
 * fields of each operation type, case-sensitive; an empty list denies that type. Borrowed from
 * the policy. */
typedef struct addon_policy_graphql {
    const addon_str_t *queries;
    size_t nqueries;
    const addon_str_t *mutations;
    size_t nmutations;
    const addon_str_t *subscriptions;
    size_t nsubscriptions;
} addon_policy_graphql_t;

typedef struct addon_policy_decision {
    int allowed;                    /* 1 allowed, 0 blocked */
    addon_policy_verdict_t verdict; /* why */
    int method_message; /* blocked: 1 → ADDON_POLICY_MSG_METHOD_FMT, 0 → HOST_PATH */
    addon_policy_precheck_t precheck; /* for ADDON_POLICY_BLOCK_PRECHECK */
    addon_policy_kind_t kind;         /* the entry that allowed, or came closest when blocked */
    size_t index;                     /* its index in domains or url_prefixes */
    addon_str_t host_pattern;         /* its host pattern (borrowed from the policy) */
    addon_str_t path_pattern;         /* its path pattern, empty = any (borrowed) */
    int passthrough;                  /* allowed by an entry with tls: passthrough */
    const addon_policy_graphql_t *graphql; /* allowed by a url_prefixes entry with a graphql
                                              block (for any reading of the path): its rules
                                              (borrowed), else NULL */
    unsigned reading;  /* blocked: the reading of the path that was (PX_PATH_* bits of
                          base/px_path.h; 0 = as sent) */
    size_t warn_block; /* 1 + the index of a block entry with `mode: warn` that matched (it
                          blocked nothing: the request was decided without it); 0: none */
} addon_policy_decision_t;

/* The readings of a path (base/px_path.h): a request is allowed only if every reading of its
 * path is; a block entry applies if it matches any. "as sent", or the transformations joined
 * ("slashes merged", "'.' segments removed", "';parameters' removed"), static storage. */
const char *addon_policy_reading_name(unsigned how);

/* Parses an allowlist (YAML or JSON) from data[0..len) (borrowed); name (copied) is used in
 * messages. 0 and *out with one reference; or PX_EPARSE/PX_ECONFIG/PX_ETOOBIG/PX_ENOMEM with
 * "name:line:col: message" in err. Empty input or an empty document is an empty policy. */
int addon_policy_load_buffer(const char *name, const char *data, size_t len, addon_policy_t **out,
                             char *err, size_t errlen);

/* Reads the allowlist file at path in the format detected from its content; as
 * addon_policy_load_buffer, plus PX_ENOENT when the file does not exist (the caller then uses
 * addon_policy_new_empty: everything is blocked). */
int addon_policy_load_file(const char *path, addon_policy_t **out, char *err, size_t errlen);

/* As addon_policy_load_buffer and addon_policy_load_file, in format fmt (AUTO: detected). An
 * agentbox file's allow_file is read relative to the directory of name/path. */
int addon_policy_load_buffer_as(const char *name, const char *data, size_t len,
                                addon_policy_format_t fmt, addon_policy_t **out, char *err,
                                size_t errlen);
int addon_policy_load_file_as(const char *path, addon_policy_format_t fmt, addon_policy_t **out,
                              char *err, size_t errlen);

/* The format data[0..len) (borrowed) is read as under AUTO: agentbox when it holds TOML table
 * headers or `key = value` lines, native when it starts like YAML/JSON (`{`, `key:`, `- `,
 * `---`) or holds nothing but comments, else a domain list. */
addon_policy_format_t addon_policy_format_detect(const char *data, size_t len);

/* "auto", "native", "domain-list" or "agentbox" into *out: 0, or PX_ECONFIG. */
int addon_policy_format_parse(const char *s, addon_policy_format_t *out);

/* The name of a format ("domain-list"), static storage. */
const char *addon_policy_format_name(addon_policy_format_t fmt);

/* The format p was read as (NATIVE for an empty policy). */
addon_policy_format_t addon_policy_format_of(const addon_policy_t *p);

/* A new empty policy (blocks everything) with one reference, or NULL when out of memory. */
addon_policy_t *addon_policy_new_empty(const char *name);

/* Adds a reference and returns p. */
addon_policy_t *addon_policy_ref(addon_policy_t *p);

/* Drops a reference; the last one frees the policy. NULL is allowed. */
void addon_policy_unref(addon_policy_t *p);

/* Entries of one kind (domains, url_prefixes or block). */
size_t addon_policy_count(const addon_policy_t *p, addon_policy_kind_t kind);

/* Decides one request into *d. p may be NULL (= empty policy). Borrows everything; never
 * allocates. The decision's patterns stay valid while the caller holds p. */
void addon_policy_decide(const addon_policy_t *p, const addon_policy_query_t *q,
                         addon_policy_decision_t *d);

/* Where entry index of list kind was written ("file:line"), or "" (static storage or p's). */
const char *addon_policy_entry_src(const addon_policy_t *p, addon_policy_kind_t kind, size_t index);

/* 1 when the allowlist says `mode: warn`: a request it would block goes on, logged WARN. */
int addon_policy_warn_mode(const addon_policy_t *p);

/* `on_block: hold`: the seconds a request it would block is held for a decider; 0: not held. */
int addon_policy_hold_seconds(const addon_policy_t *p);

/* 1 when some entry (domains first, then url_prefixes) matches host and allows port, whatever
 * the path and method (CONNECT and SNI-time checks); else 0. *passthrough (may be NULL) gets
 * whether the first such entry asks for tls: passthrough. host is borrowed. */
int addon_policy_has_host(const addon_policy_t *p, addon_str_t host, uint16_t port, int tls,
                          int *passthrough);

/* The graphql block of url_prefixes[index] (borrowed from p), or NULL when it has none. */
const addon_policy_graphql_t *addon_policy_graphql(const addon_policy_t *p, size_t index);

/* 1 when host (borrowed) is open to unrestricted GET over https: no block entry names it (any
 * path) for GET, and a domains entry, or a url_prefixes entry without path whose methods are
 * empty or hold GET, matches it on port 443. What an Anthropic server-side tool may be allowed
 * to fetch (docs/anthropic-tools.md). */
int addon_policy_host_get_open(const addon_policy_t *p, addon_str_t host);

/* 1 when a block entry without path or methods matches host (a CONNECT to it is refused), with
 * its index in *index (may be NULL); else 0. host is borrowed. */
int addon_policy_host_blocked(const addon_policy_t *p, addon_str_t host, size_t *index);

/* Writes ADDON_POLICY_MSG_BLOCK_FMT for block[index] into buf. snprintf-style. */
size_t addon_policy_block_message(const addon_policy_t *p, size_t index, char *buf, size_t len);

/* Writes the final policy as airlock YAML (`airlock check --print-effective`): every entry with
 * a comment saying where it came from (file:line, default, allow_file), then the entries that
 * block entries removed and which block removed each. The text loads back as a native
 * allowlist deciding the same. snprintf-style. */
size_t addon_policy_print_effective(const addon_policy_t *p, char *buf, size_t len);

/* 0 when drafts (an approvals drafts file, loaded as YAML) holds only domains and url_prefixes
 * entries; else PX_ECONFIG with "name: KEY is not allowed in a drafts file ..." in err. */
int addon_policy_drafts_check(const addon_policy_t *drafts, char *err, size_t errlen);

/* Appends copies of drafts' domains and url_prefixes entries (borrowed) to p's, after p's own,
 * each with its source ("drafts-file:line"). p must not be shared yet (a policy being loaded).
 * 0, PX_ENOMEM or PX_ETOOBIG (over ADDON_POLICY_ENTRIES_MAX): p is then partly merged and the
 * caller drops it. */
int addon_policy_merge_drafts(addon_policy_t *p, const addon_policy_t *drafts);

/* A short name for a pre-check ("path has a .. segment"). Static storage. */
const char *addon_policy_precheck_name(addon_policy_precheck_t c);

/* Writes the `airlock check` summary: a count line, then one line per entry, each ending with
 * '\n'. snprintf-style: returns the full length, writes at most len-1 bytes plus a NUL. */
size_t addon_policy_describe(const addon_policy_t *p, char *buf, size_t len);

/* Writes the one-line `airlock explain` text for decision d of query q (both borrowed), e.g.
 * "blocked: method POST not allowed (url_prefixes[0] matches host and path)". snprintf-style. */
size_t addon_policy_explain(const addon_policy_t *p, const addon_policy_query_t *q,
                            const addon_policy_decision_t *d, char *buf, size_t len);

#endif
