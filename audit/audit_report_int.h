/* The report's aggregates, shared by the reader (audit_report.c) and the page writer
 * (audit_html.c). Every table is capped; counts beyond a cap are kept as totals. */
#ifndef AUDIT_REPORT_INT_H
#define AUDIT_REPORT_INT_H

#include "audit/audit_line.h"
#include "audit/audit_report.h"
#include "audit/audit_req.h"
#include "audit/audit_sugg.h"
#include "audit/audit_tab.h"

#define AUDIT_REPORT_HOSTS_MAX 20000  /* distinct request hosts */
#define AUDIT_REPORT_GROUPS_MAX 20000 /* distinct blocked (host, path pattern) groups */
#define AUDIT_REPORT_CAUSES_MAX 2000  /* distinct error causes, TLS, credential, warning keys */
#define AUDIT_REPORT_DNS_MAX 50000    /* distinct DNS names */
#define AUDIT_REPORT_BUCKETS 120      /* timeline bars */
#define AUDIT_REPORT_TASKS_MAX 1000   /* TASK START marks kept */
#define AUDIT_REPORT_FILES_MAX 256
#define AUDIT_REPORT_ROWS_MAX 500    /* rows shown per table; the rest is summed up */
#define AUDIT_REPORT_EXAMPLE_MAX 200 /* bytes of an example line */
#define AUDIT_REPORT_REASON_MAX 300  /* bytes of a reason */

typedef struct audit_rep_bucket {
    unsigned long allowed, blocked, errors;
} audit_rep_bucket_t;

typedef struct audit_rep_task {
    unsigned long at; /* requests before it */
    char ts[32];
} audit_rep_task_t;

typedef struct audit_rep_host {
    unsigned long requests, allowed, blocked, errors;
    unsigned long masked; /* requests with a credential swapped */
} audit_rep_host_t;

/* A blocked group, key "host\x01pattern"; also the value of the "example" tables. */
typedef struct audit_rep_group {
    unsigned long count;
    char methods[64]; /* "GET, POST" (distinct, as they come, capped) */
    int more_methods;
    const char *file;
    unsigned long lineno;
    char example[AUDIT_REPORT_EXAMPLE_MAX + 1];
    char reason[AUDIT_REPORT_REASON_MAX + 1];
    unsigned long other_reasons;
    int suggestible; /* some request of the group went into the suggestions */
} audit_rep_group_t;

typedef struct audit_rep_dns {
    unsigned long count;
    unsigned types; /* 1 A, 2 AAAA, 4 other */
} audit_rep_dns_t;

struct audit_report {
    const addon_policy_t *current;
    const char *current_name;
    addon_policy_t *probe;
    const char *files[AUDIT_REPORT_FILES_MAX];
    size_t nfiles;
    unsigned long lines, known, requests, allowed, blocked, errors, dns_lines, tasks_seen;
    unsigned long stripped, collapsed, tls_rejected, warnings, masked;
    unsigned long approved, denied; /* DECISION lines: held requests' questions answered */
    unsigned long health;           /* `airlock health` probes: not requests, not DNS queries */
    unsigned long health_pending;   /* health DNS lines whose HTTP probe line is still to come */
    audit_rep_bucket_t buckets[AUDIT_REPORT_BUCKETS];
    unsigned long width; /* requests per bucket */
    audit_rep_task_t tasks[AUDIT_REPORT_TASKS_MAX];
    size_t ntasks;
    audit_tab_t *hosts;
    audit_tab_t *groups;
    audit_tab_t *causes; /* ERROR lines by cause */
    audit_tab_t *tls;    /* TLS REJECTED by host and reason */
    audit_tab_t *creds;  /* STRIPPED/COLLAPSED by kind, header and host */
    audit_tab_t *warns;  /* WARNING lines by text */
    audit_tab_t *dns;    /* names queried */
    audit_tab_t *malformed;
    audit_sugg_t *sugg;
    unsigned long unallowable; /* blocked requests no entry can allow */
    audit_req_t req;
    char why[AUDIT_WHY_MAX];
};

#endif
