/* The bridge between the TOML reader (addon_agentbox_toml.cpp, toml++) and the C policy builder
 * (addon_agentbox.c): the [network] table of an agentbox config.toml as plain C data, each value
 * with its 1-based line and column. C and C++ include this; only addons/ and the fuzz targets. */
#ifndef ADDON_AGENTBOX_INT_H
#define ADDON_AGENTBOX_INT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ADDON__AB_PORTS_MAX 64 /* ports of one allow_hosts entry */

typedef struct addon__ab_pos {
    unsigned line;
    unsigned col;
} addon__ab_pos_t;

/* One allow_hosts or block_hosts item: a string, or (allow_hosts) {host = "...", ports = [..]}. */
typedef struct addon__ab_host {
    char *host; /* malloc'd, NUL-terminated UTF-8 (TOML strings cannot hold NUL) */
    size_t len;
    addon__ab_pos_t pos;
    uint16_t ports[ADDON__AB_PORTS_MAX];
    size_t nports;
} addon__ab_host_t;

#define ADDON__AB_BUDGETS_MAX 64 /* [[airlock.budgets]] items (ADDON_BUDGETS_MAX) */

/* One [[airlock.budgets]] item (airlock's own table, beside agentbox's): host and up to four
 * limits, each as written (an integer as its decimal text), NULL when not set. */
typedef struct addon__ab_budget {
    addon__ab_pos_t pos;
    char *host;
    addon__ab_pos_t host_pos;
    char *val[4]; /* requests, sent, received, rate (addon_budget_kind_t order) */
    addon__ab_pos_t val_pos[4];
} addon__ab_budget_t;

typedef struct addon__ab_net {
    addon__ab_pos_t table; /* where [network] starts */
    char *mode;            /* NULL when absent */
    addon__ab_pos_t mode_pos;
    addon__ab_host_t *allow;
    size_t nallow;
    addon__ab_host_t *block;
    size_t nblock;
    char *allow_file; /* NULL when absent */
    addon__ab_pos_t allow_file_pos;
    addon__ab_budget_t *budgets; /* from the [airlock] table */
    size_t nbudgets;
} addon__ab_net_t;

/* Parses data[0..len) (borrowed) as TOML and copies its [network] table (and the budgets of
 * an [airlock] table) into *out (zeroed
 * first; free with addon__ab_net_free, on failure too). 0; PX_EPARSE (TOML syntax) or
 * PX_ECONFIG (no [network] table, a wrong type, an unknown key) with "name:line:col: message" in
 * err; PX_ENOMEM. */
int addon__ab_toml_read(const char *name, const char *data, size_t len, addon__ab_net_t *out,
                        char *err, size_t errlen);

/* Frees what addon__ab_toml_read allocated in n; n itself is the caller's. */
void addon__ab_net_free(addon__ab_net_t *n);

#ifdef __cplusplus
}
#endif

#endif
