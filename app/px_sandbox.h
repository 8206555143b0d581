/* Many sandboxes behind one airlock (`--sandboxes DIR`): each subdirectory of DIR is one
 * sandbox, chosen by the source address of a connection or a DNS query, with its own
 * allowlist, replacements, network log, upstream pool and connection limit. The source
 * decides, never anything the client says: a request from sandbox A is decided under A's
 * policy, swaps A's credentials only, is logged in A's log and rides only A's upstream
 * connections. A source in no sandbox gets nothing (no DNS answer, the connection closed) and
 * one line in the host log (--log).
 *
 * A sandbox directory holds:
 *   sandbox.conf            `source CIDR` (one or more lines), `max-connections N` (optional)
 *   network-allowlist.yaml  its allowlist (any format airlock reads; auto-detected)
 *   replacements.json       its credentials (optional)
 *   network-sandbox.log     its network log (created when missing)
 *   mitmproxy-ca-cert.pem   with --ca-per-conversation: written by airlock, the certificate
 *                           of the sandbox's own CA, which signs only for its allowlist's
 *                           hosts (the key stays in CONFDIR/sandbox-ca/NAME)
 *   mitmproxy-ca.pem        optional: an operator-made CA for this sandbox only (with
 *                           --ca-per-conversation it must carry name constraints)
 * Sources are compared in one address space, IPv4 mapped into ::ffff:0:0/96 (px_srcnet.h), so
 * that `::/0` on a dual-stack listener cannot hide behind another sandbox's `10.0.0.0/8`.
 *
 * SIGHUP re-reads DIR: new subdirectories become sandboxes, known ones re-read their files (an
 * invalid file keeps that sandbox's previous policy and touches no other), and vanished ones
 * take no new connection. An open connection whose sandbox vanished, or whose source left its
 * sandbox's sources, takes no new request either (px_client_sandboxes_changed): its request in
 * flight finishes, then it closes; idle ones and tunnels close at once. */
#ifndef PX_SANDBOX_H
#define PX_SANDBOX_H

#include <limits.h>
#include <stddef.h>
#include <sys/socket.h>

#include "ca/ca.h"
#include "proxy/px_config.h"
#include "proxy/px_ctx.h"
#include "proxy/px_scope.h"
#include "proxy/px_srcnet.h"

#define PX_SB_MAX 4096          /* sandboxes in DIR; more are refused at load */
#define PX_SB_CONF_MAX 4096     /* sandbox.conf bytes */
#define PX_SB_CA_DIR "sandbox-ca" /* CONFDIR/sandbox-ca/NAME: a sandbox's own CA, with its key */

typedef struct dns_resolver dns_resolver_t;
typedef struct px_snapshot px_snapshot_t;
typedef struct px_log px_log_t;
typedef struct px_upmgr px_upmgr_t;

typedef struct px_sandbox {
    px_scope_t scope;          /* what its connections run under (first: a scope is a sandbox) */
    struct px_sandbox *next;
    char name[PX_SB_NAME_MAX + 1];
    char allow_path[PATH_MAX];
    char repl_path[PATH_MAX];
    char log_path[PATH_MAX];
    px_config_t cfg;           /* the engine's, with this sandbox's files */
    char ca_dir[PATH_MAX];     /* a CA airlock made: where its key lives (CONFDIR/sandbox-ca/NAME) */
} px_sandbox_t;

/* The engine's sandboxes: the list, and what a new sandbox needs from the engine (borrowed). */
typedef struct px_sandboxes {
    px_ctx_t *ctx;
    dns_resolver_t *resolver;
    const px_cidr_t *own; /* the machine's own addresses (refused upstream) */
    size_t n_own;
    px_sandbox_t *list;   /* every sandbox */
    size_t n;             /* ... not removed */
} px_sandboxes_t;

/* Parses the text of a sandbox.conf (NUL-terminated; changed in place) into sb's sources and
 * limit. Returns 0, or -1 with a reason in err. */
int px_sandbox_conf_parse(px_sandbox_t *sb, char *text, char *err, size_t errlen);

/* Reads (startup) or re-reads (SIGHUP) set->ctx->cfg->sandboxes_dir. At startup any problem is an
 * error: returns -1 after saying why on stderr. On a reload, a sandbox whose files are invalid
 * keeps its old policy (said on stderr); returns 0. After a re-read that removed a sandbox or
 * changed one's sources, the open connections are told (px_client_sandboxes_changed). */
int px_sandboxes_load(px_sandboxes_t *set, int startup);

/* The sandbox whose sources hold src, or NULL (borrowed: take a reference to keep it). */
px_sandbox_t *px_sandbox_for(px_sandboxes_t *set, const struct sockaddr *src);

/* The same for an address as px_srcnet_addr() gives it (IPv4 mapped). */
px_sandbox_t *px_sandbox_for_addr(px_sandboxes_t *set, const uint8_t addr[16]);

/* The same as a scope: ctx->scope_for, with ctx->scope_arg the set (borrowed, or NULL). */
px_scope_t *px_sandbox_scope_for(px_ctx_t *ctx, const uint8_t src[16]);

/* Shutdown: every sandbox's idle upstream connections close. */
void px_sandboxes_stop(px_sandboxes_t *set);

/* Hands the sandboxes' pending log lines to their writers, as px_log_kick(log, force) does for
 * one log: every log when force is set, else those written to since their last kick. Any loop
 * may call it (--workers: the list is read under the scope lock). Returns 1 when lines were
 * left pending (kick again with force within PX_LOG_DELAY_MS). */
int px_sandboxes_kick_logs(px_sandboxes_t *set, int force);

/* After the loop ran dry: the engine's references go; upstream managers are freed. */
void px_sandboxes_free(px_sandboxes_t *set);

#endif
