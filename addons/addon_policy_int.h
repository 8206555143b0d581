/* Names shared only by the parts of the allowlist: the snapshot and its decisions
 * (addon_policy.c), host patterns and the entry lists (addon_policy_build.c), the readers of each
 * format (addon_policy_yaml.c, addon_domainlist.c, addon_agentbox.c over addon_agentbox_toml.cpp),
 * format detection (addon_policy_load.c) and the texts (addon_policy_text.c). Nothing outside
 * addons/ includes this, except the fuzz targets. */
#ifndef ADDON_POLICY_INT_H
#define ADDON_POLICY_INT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "addons/addon_policy.h"

#define ADDON__POLICY_WHAT_MAX 64 /* "url_prefixes[123].methods[4]" */
#define ADDON__POLICY_SRC_MAX 512 /* "path/to/extra-hosts.txt:12 (allow_file)" */

typedef struct addon__policy_entry {
    addon_str_t host; /* lowercased, A-labels; a non-glob one without trailing dot, brackets or
                         leading dot */
    addon_str_t path; /* empty = any path */
    int host_glob;    /* addon_glob_is_glob(host), computed once */
    int path_glob;
    int sub;              /* written with a leading dot: the host and every name under it */
    addon_str_t *methods; /* as written; none = any method */
    size_t nmethods;
    uint16_t *ports; /* allowed besides the scheme's default port */
    size_t nports;
    int passthrough;
    addon_policy_graphql_t *graphql; /* url_prefixes only; NULL = no graphql block */
    char *src; /* where it was written: "file:line", "default", ...; NULL = not said */
    int warn;  /* block entries: `mode: warn`: it blocks nothing, a request it matches is logged
                  WARN (addon_policy_decision_t.warn_block) */
} addon__policy_entry_t;

/* An entry that a block entry took out of the effective list (agentbox's block_hosts). */
typedef struct addon__policy_removed {
    char *text;   /* the entry as written, normalised (".github.com") */
    char *src;    /* where it was written */
    size_t block; /* the index of the block entry that removed it */
} addon__policy_removed_t;

typedef struct addon__policy_list {
    addon__policy_entry_t *v;
    size_t n;
    size_t cap;
} addon__policy_list_t;

struct addon_policy {
    atomic_int refs;
    char *name;
    addon_policy_format_t format;
    addon__policy_list_t domains;
    addon__policy_list_t urls;
    addon__policy_list_t blocks;
    addon__policy_removed_t *removed;
    size_t nremoved;
    size_t removed_cap;
    size_t ngraphql; /* url_prefixes entries with a graphql block (counted once loaded): the
                        per-request scan for them is skipped when there are none */
    struct addon_budget *budgets; /* egress budgets (addon_policy_budget.c) */
    size_t nbudgets;
    char **fetch_pass; /* provider_fetch_pass names (addon_provider_pass.c) */
    size_t nfetch_pass;
    int warn; /* `mode: warn`: what the policy would block goes on, logged WARN (the guards of
                 the proxy itself stay: docs/allowlist.md, "Warn mode") */
    int hold_seconds; /* `on_block: hold`: a blocked request is held this long (docs/approvals.md);
                         0: blocked at once */
};

/* A new policy named name (copied), one reference; NULL when out of memory. */
addon_policy_t *addon__policy_new(const char *name, addon_policy_format_t fmt);

/* Frees p whatever its reference count (a policy still being built). */
void addon__policy_free(addon_policy_t *p);

/* A new zeroed entry at the end of the list of kind, or NULL: PX_ENOMEM or PX_ETOOBIG (more
 * than ADDON_POLICY_ENTRIES_MAX) in *rc. The pointer is valid until the next push. */
addon__policy_entry_t *addon__policy_push(addon_policy_t *p, addon_policy_kind_t kind, int *rc);

/* Frees what entry e holds (not e itself). */
void addon__policy_entry_free(addon__policy_entry_t *e);

/* Records that block[block] removed text (borrowed, copied) written at src (copied). */
int addon__policy_note_removed(addon_policy_t *p, const char *text, size_t len, const char *src,
                               size_t block);

/* Sets e->src to a copy of src; 0 or PX_ENOMEM. */
int addon__policy_set_src(addon__policy_entry_t *e, const char *src);

/* Parses a host pattern s[0..len) (borrowed) into e->host, e->host_glob and e->sub: lowercased;
 * a non-glob pattern loses one trailing dot, IPv6 brackets and (sub) one leading dot; non-ASCII
 * labels become A-labels (punycode). 0; PX_ECONFIG with the reason (static) in *why; PX_ENOMEM. */
int addon__policy_host(const char *s, size_t len, addon__policy_entry_t *e, const char **why);

/* The entry's host as written after normalisation (".github.com" for sub) into buf (NUL-ended,
 * cut to len). Returns buf. */
const char *addon__policy_host_text(const addon__policy_entry_t *e, char *buf, size_t len);

/* 1 when block entry b (host only) names the allow entry e as written: b's glob matches e's
 * text, or both texts are equal. */
int addon__policy_block_names(const addon__policy_entry_t *b, const addon__policy_entry_t *e);

/* Reads a domain list data[0..len) (borrowed) into p's domains, messages as "name:line:col: ...".
 * origin (may be NULL) is added to each entry's source: "name:line (origin)". 0, PX_ECONFIG,
 * PX_ETOOBIG or PX_ENOMEM. */
int addon__domainlist_read(addon_policy_t *p, const char *name, const char *data, size_t len,
                           const char *origin, char *err, size_t errlen);

/* Reads airlock's YAML/JSON into p (addon_policy_yaml.c). */
int addon__policy_yaml_read(addon_policy_t *p, const char *name, const char *data, size_t len,
                            char *err, size_t errlen);

/* Reads an agentbox config.toml into p. read_files 0 leaves allow_file unread (fuzzing). */
int addon__agentbox_read(addon_policy_t *p, const char *name, const char *data, size_t len,
                         int read_files, char *err, size_t errlen);

/* Loads data in fmt as addon_policy_load_buffer_as, read_files as above. */
int addon__policy_load(const char *name, const char *data, size_t len, addon_policy_format_t fmt,
                       int read_files, addon_policy_t **out, char *err, size_t errlen);

/* Reads a `budgets:` list (YAML node n, borrowed) into p (addon_policy_budget.c); 0, or
 * PX_ECONFIG/PX_ENOMEM with "name:line:col: budgets[i]...: message" in err. */
struct addon_yaml_node;
int addon__policy_budgets_yaml(addon_policy_t *p, const struct addon_yaml_node *n, char *err,
                               size_t errlen);

/* Writes p's budgets (p may be NULL): yaml 0, one `airlock check` line each ("budgets[0]
 * requests for all: 100 (file:line)"); yaml 1, a `budgets:` list that loads back. */
struct addon_out;
void addon__policy_budgets_text(const addon_policy_t *p, struct addon_out *o, int yaml);

/* Adds the budget of kind k for host[0..hlen) ("all" or a host pattern) whose limit is written
 * val[0..vlen) (a number, a size or a rate; all borrowed), set at src (copied): the one
 * builder behind every format's reader. 0; PX_ECONFIG or PX_ENOMEM with the message (no
 * position) in msg and in *at what it is about (ADDON__BUDGET_AT_*). */
#define ADDON__BUDGET_AT_ITEM 0
#define ADDON__BUDGET_AT_HOST 1
#define ADDON__BUDGET_AT_VALUE 2
int addon__policy_budget_add(addon_policy_t *p, int k, const char *host, size_t hlen,
                             const char *val, size_t vlen, const char *src, char *msg,
                             size_t msglen, int *at);

/* Frees p's budgets (addon_policy_budget.c). */
void addon__policy_budgets_free(addon_policy_t *p);

/* provider_fetch_pass (addon_provider_pass.c): read from YAML node n (borrowed; errors as
 * "name:line:col: provider_fetch_pass[i]: message"), freed, and written as budgets are. */
int addon__policy_fetch_pass_yaml(addon_policy_t *p, const struct addon_yaml_node *n, char *err,
                                  size_t errlen);
void addon__policy_fetch_pass_free(addon_policy_t *p);
void addon__policy_fetch_pass_text(const addon_policy_t *p, struct addon_out *o, int yaml);

/* 1 when entry e's host pattern matches host (any case, one trailing dot, brackets allowed). */
int addon__policy_host_matches(const addon__policy_entry_t *e, addon_str_t host);

/* Decision helpers used by the texts. */
const addon__policy_list_t *addon__policy_list(const addon_policy_t *p, addon_policy_kind_t kind);

#endif
