/* Many sandboxes behind one airlock: the directory of sandboxes, each one's files, and the
 * choice of a sandbox by source address (px_sandbox.h). */
#include "app/px_sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "addons/addon_budget.h"
#include "base/px_err.h"
#include "proxy/px_caconv.h"
#include "proxy/px_client.h"
#include "proxy/px_log.h"
#include "proxy/px_policy.h"
#include "proxy/px_upstream.h"

/* ---- sandbox.conf ------------------------------------------------------------------------ */

int px_sandbox_conf_parse(px_sandbox_t *sb, char *text, char *err, size_t errlen)
{
    sb->scope.nsrc = 0;
    sb->scope.max_conns = 0;
    int lineno = 0;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash != NULL)
            *hash = '\0';
        char key[32], val[128], extra[2];
        int n = sscanf(line, "%31s %127s %1s", key, val, extra);
        if (n <= 0)
            continue;
        if (n != 2) {
            snprintf(err, errlen, "line %d: expected 'source CIDR' or 'max-connections N'",
                     lineno);
            return -1;
        }
        if (strcmp(key, "source") == 0) {
            if (sb->scope.nsrc >= PX_SB_SOURCES_MAX || px_srcnet_parse(&sb->scope.src[sb->scope.nsrc], val) != 0) {
                snprintf(err, errlen, "line %d: bad or too many sources ('%s'; at most %d)",
                         lineno, val, PX_SB_SOURCES_MAX);
                return -1;
            }
            sb->scope.nsrc++;
        } else if (strcmp(key, "max-connections") == 0) {
            uint64_t v;
            if (px_parse_u64(val, 1, PX_CONNS_MAX, &v) != 0) {
                snprintf(err, errlen, "line %d: max-connections must be 1..%d", lineno,
                         PX_CONNS_MAX);
                return -1;
            }
            sb->scope.max_conns = (size_t)v;
        } else {
            snprintf(err, errlen, "line %d: unknown key '%s'", lineno, key);
            return -1;
        }
    }
    if (sb->scope.nsrc == 0) {
        snprintf(err, errlen, "no 'source CIDR' line");
        return -1;
    }
    return 0;
}

/* Reads DIR/name/sandbox.conf into sb (name, paths, sources, limit, cfg). Returns 0 or -1. */
static int px__sb_read(const px_config_t *ecfg, const char *name, px_sandbox_t *sb, char *err,
                       size_t errlen)
{
    const char *dir = ecfg->sandboxes_dir;
    char path[PATH_MAX];
    snprintf(sb->name, sizeof(sb->name), "%s", name);
    snprintf(path, sizeof(path), "%s/%s/sandbox.conf", dir, name);
    FILE *f = fopen(path, "re");
    if (f == NULL) {
        snprintf(err, errlen, "%.300s: %s", path, strerror(errno));
        return -1;
    }
    char text[PX_SB_CONF_MAX + 1];
    size_t n = fread(text, 1, sizeof(text), f);
    fclose(f);
    if (n > PX_SB_CONF_MAX) {
        snprintf(err, errlen, "%.300s: over %d bytes", path, PX_SB_CONF_MAX);
        return -1;
    }
    text[n] = '\0';
    char why[200];
    if (px_sandbox_conf_parse(sb, text, why, sizeof(why)) != 0) {
        snprintf(err, errlen, "%.300s: %.200s", path, why);
        return -1;
    }
    snprintf(sb->allow_path, sizeof(sb->allow_path), "%s/%s/network-allowlist.yaml", dir, name);
    snprintf(sb->repl_path, sizeof(sb->repl_path), "%s/%s/replacements.json", dir, name);
    snprintf(sb->log_path, sizeof(sb->log_path), "%s/%s/network-sandbox.log", dir, name);
    sb->cfg = *ecfg;
    sb->cfg.allowlist_path = sb->allow_path;
    sb->cfg.replacements_path = sb->repl_path;
    sb->cfg.log_path = sb->log_path;
    sb->cfg.log_create = 1;
    sb->cfg.sandboxes_dir = NULL;
    return 0;
}

/* ---- the set ----------------------------------------------------------------------------- */

/* The live sandbox (other than self) whose sources overlap sb's, or NULL. IPv4 and IPv6
 * sources are compared in one space (px_srcnet.h): `::/0` overlaps `10.0.0.0/8`. */
static px_sandbox_t *px__sb_overlap(px_sandboxes_t *set, const px_sandbox_t *sb,
                                    const px_sandbox_t *self)
{
    for (px_sandbox_t *o = set->list; o != NULL; o = o->next) {
        if (o == self || o->scope.gone)
            continue;
        for (size_t i = 0; i < sb->scope.nsrc; i++)
            for (size_t j = 0; j < o->scope.nsrc; j++)
                if (px_srcnet_overlap(&sb->scope.src[i], &o->scope.src[j]))
                    return o;
    }
    return NULL;
}

static px_sandbox_t *px__sb_named(px_sandboxes_t *set, const char *name)
{
    for (px_sandbox_t *sb = set->list; sb != NULL; sb = sb->next)
        if (!sb->scope.gone && strcmp(sb->name, name) == 0)
            return sb;
    return NULL;
}

/* An operator-made CA in the sandbox's directory (DIR/NAME/mitmproxy-ca.pem), for that sandbox
 * only: 1 with *out loaded, 0 when there is none, -1 with err. --ca-per-conversation takes it
 * only with name constraints, as it takes a confdir's CA. */
static int px__sb_own_ca(const px_config_t *ecfg, const px_sandbox_t *sb, const char *dir,
                         ca_t **out, char *err, size_t errlen)
{
    char path[PATH_MAX], why[1024];
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, CA_FILE_KEY_CERT) >= sizeof(path) ||
        access(path, F_OK) != 0)
        return 0;
    if (ca_load(out, dir, 0, PX_CACONV_SB_CACHE, why, sizeof(why)) != 0) {
        snprintf(err, errlen, "sandbox %s: its CA: %s", sb->name, why);
        return -1;
    }
    if (ecfg->ca_per_conversation && ca_get_constraints(*out) == NULL) {
        snprintf(err, errlen, "sandbox %s: %.1000s " PX_CACONV_UNCONSTRAINED, sb->name, path);
        ca_free(*out);
        *out = NULL;
        return -1;
    }
    px_diag(PX_DIAG_INFO, "sandbox %s: signs with its own CA %s", sb->name, path);
    return 1;
}

/* sb's CA, if it has one of its own: the operator's in its directory, or with
 * --ca-per-conversation one made from its allowlist (sb->scope.snap) the first time, whose key stays
 * in CONFDIR/sandbox-ca/NAME and whose certificate goes into the sandbox's directory.
 * Returns 0 (*made: 1 when a CA was made now) or -1 with err. */
static int px__sb_ca(px_sandboxes_t *set, px_sandbox_t *sb, int *made, char *err, size_t errlen)
{
    const px_config_t *ecfg = set->ctx->cfg;
    char pubdir[PATH_MAX], ip[INET_ADDRSTRLEN] = "", why[1024], *desc = NULL;
    if (set->ctx->tls_server == NULL)
        return 0; /* no TLS is served */
    snprintf(pubdir, sizeof(pubdir), "%s/%s", ecfg->sandboxes_dir, sb->name);
    int own = px__sb_own_ca(ecfg, sb, pubdir, &sb->scope.ca, err, errlen);
    if (own != 0 || !ecfg->ca_per_conversation)
        return own < 0 ? -1 : 0; /* without: the sandbox shares the engine's CA */
    snprintf(sb->ca_dir, sizeof(sb->ca_dir), "%s/" PX_SB_CA_DIR "/%s", ecfg->confdir, sb->name);
    inet_ntop(AF_INET, &set->ctx->proxy_ip, ip, sizeof(ip)); /* clients without SNI get its leaf */
    px_caconv_sb_t a = {.privdir = sb->ca_dir,
                        .pubdir = pubdir,
                        .policy = sb->scope.snap->cfg.policy,
                        .path = sb->allow_path,
                        .days = ecfg->ca_days,
                        .proxy_ip = ip};
    if (px_caconv_sandbox(&a, &sb->scope.ca, made, &desc, why, sizeof(why)) != 0) {
        snprintf(err, errlen, "sandbox %s: %s", sb->name, why);
        return -1;
    }
    if (*made)
        px_diag(PX_DIAG_WARN,
                "sandbox %s: created a per-conversation CA (valid %d days; permits %s): its "
                "agent must trust %s/%s",
                sb->name, ecfg->ca_days, desc != NULL ? desc : "?", pubdir, CA_FILE_CERT_PEM);
    free(desc);
    return 0;
}

/* The last reference of a removed sandbox: its log and policy go; the structure (its pool's
 * configuration) stays until the engine ends. */
static void px__sb_release(px_scope_t *s)
{
    px_snapshot_unref(s->snap);
    s->snap = NULL;
    px_log_close(s->log);
    s->log = NULL;
    ca_free(s->ca); /* leaves handed out keep what they need */
    s->ca = NULL;
}

/* A sandbox new to the engine: its files, CA, log and pool. Returns 0 or -1 with err. */
static int px__sb_add(px_sandboxes_t *set, const char *name, char *err, size_t errlen)
{
    px_sandbox_t *sb = calloc(1, sizeof(*sb));
    if (sb == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    px_sandbox_t *o = NULL;
    int ca_made = 0;
    if (px__sb_read(set->ctx->cfg, name, sb, err, errlen) != 0)
        goto fail;
    if ((o = px__sb_overlap(set, sb, NULL)) != NULL) {
        snprintf(err, errlen, "sandbox %s: its sources overlap those of sandbox %s", name,
                 o->name);
        goto fail;
    }
    if (px_snapshot_load(&sb->cfg, 1, &sb->scope.snap) != 0) {
        snprintf(err, errlen, "sandbox %s: its files are invalid (see above)", name);
        goto fail;
    }
    if (px__sb_ca(set, sb, &ca_made, err, errlen) != 0)
        goto fail;
    if (px_log_open(sb->log_path, 1, &sb->scope.log, err, errlen) != 0)
        goto fail;
    px_log_set_batched(sb->scope.log, 1); /* kicked once per loop turn with the engine's */
    px_log_task_start(sb->scope.log);     /* a sandbox's log starts like a conversation's */
    sb->scope.up = px_upmgr_new(&set->ctx->loop, &sb->cfg, set->resolver, set->ctx->tls_client);
    if (sb->scope.up == NULL) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    px_upmgr_set_own(sb->scope.up, set->own, set->n_own, set->ctx->proxy_ip);
    sb->scope.refs = 1;
    sb->scope.name = sb->name;
    sb->scope.own_ca_only = set->ctx->cfg->ca_per_conversation;
    sb->scope.release = px__sb_release;
    px_scope_wrlock(); /* other loops look sources up in the list (--workers) */
    sb->next = set->list;
    __atomic_store_n(&set->list, sb, __ATOMIC_RELEASE);
    px_scope_unlock();
    set->n++;
    return 0;
fail:
    if (ca_made) { /* nothing of a sandbox left out stays behind */
        char cert[PATH_MAX];
        ca_remove_confdir(sb->ca_dir);
        if ((size_t)snprintf(cert, sizeof(cert), "%s/%s/%s", set->ctx->cfg->sandboxes_dir, name,
                             CA_FILE_CERT_PEM) < sizeof(cert))
            unlink(cert);
    }
    ca_free(sb->scope.ca);
    px_snapshot_unref(sb->scope.snap);
    px_log_close(sb->scope.log);
    free(sb);
    return -1;
}

/* A known sandbox re-reads its files; anything invalid keeps what it had. Returns 1 when its
 * sources changed (its generation moved), else 0. */
static int px__sb_reload(px_sandboxes_t *set, px_sandbox_t *sb)
{
    px_sandbox_t fresh;
    char err[512];
    memset(&fresh, 0, sizeof(fresh));
    if (px__sb_read(set->ctx->cfg, sb->name, &fresh, err, sizeof(err)) != 0 ||
        (px__sb_overlap(set, &fresh, sb) != NULL &&
         snprintf(err, sizeof(err), "sandbox %s: its new sources overlap another's", sb->name))) {
        px_diag(PX_DIAG_WARN, "sandbox %s keeps its previous configuration: %s", sb->name, err);
        return 0;
    }
    px_snapshot_t *n = NULL;
    if (px_snapshot_load(&sb->cfg, 0, &n) != 0) {
        px_diag(PX_DIAG_WARN, "sandbox %s keeps its previous policy", sb->name);
        return 0;
    }
    int moved = fresh.scope.nsrc != sb->scope.nsrc || memcmp(fresh.scope.src, sb->scope.src, sizeof(sb->scope.src)) != 0;
    px_scope_wrlock(); /* other loops read the sources (--workers) */
    if (moved) /* its open connections check that their source is still in */
        __atomic_add_fetch(&sb->scope.gen, 1, __ATOMIC_RELEASE);
    memcpy(sb->scope.src, fresh.scope.src, sizeof(sb->scope.src));
    sb->scope.nsrc = fresh.scope.nsrc;
    sb->scope.max_conns = fresh.scope.max_conns;
    px_scope_unlock();
    px_snapshot_unref(px_scope_set_snap(&sb->scope, n));
    if (sb->scope.budgets != NULL) /* budgets still named keep their counts */
        addon_budget_table_sync(sb->scope.budgets, n->cfg.policy, uv_now(set->ctx->loop.uv));
    return moved;
}

static void px__sb_gone(px_sandboxes_t *set, px_sandbox_t *sb)
{
    px_scope_wrlock();
    __atomic_store_n(&sb->scope.gone, 1, __ATOMIC_RELEASE); /* workers look without the lock */
    __atomic_add_fetch(&sb->scope.gen, 1, __ATOMIC_RELEASE); /* its connections take no request */
    px_scope_unlock();
    set->n--;
    px_upmgr_close_idle(sb->scope.up);
    /* its conversation ends: the CA's key goes (open connections keep the CA in memory), and
     * a sandbox of the same name later is a new conversation with a new CA */
    if (sb->ca_dir[0] != '\0' && ca_remove_confdir(sb->ca_dir) != 0)
        px_diag(PX_DIAG_WARN, "sandbox %s: cannot remove its CA in %s", sb->name, sb->ca_dir);
    px_diag(PX_DIAG_WARN,
            "sandbox %s removed (its requests in flight finish; its connections then close)",
            sb->name);
    px_scope_unref(&sb->scope);
}

static int px__sb_dirent(const struct dirent *d)
{
    return d->d_name[0] != '.';
}

int px_sandboxes_load(px_sandboxes_t *set, int startup)
{
    const char *dir = set->ctx->cfg->sandboxes_dir;
    struct dirent **names = NULL;
    int n = scandir(dir, &names, px__sb_dirent, alphasort);
    if (n < 0) {
        px_diag(startup ? PX_DIAG_ERROR : PX_DIAG_WARN, "sandboxes %s: %s%s", dir, strerror(errno),
                startup ? "" : " (every sandbox keeps its configuration)");
        return startup ? -1 : 0;
    }
    int rc = 0;
    size_t added = 0, kept = 0;
    int moved = 0; /* a sandbox went, or one's sources changed: open connections may not belong */
    /* the ones gone from DIR first, so that a renamed sandbox's sources are free again */
    for (px_sandbox_t *sb = set->list; sb != NULL; sb = sb->next) {
        int found = 0;
        for (int i = 0; i < n && !found; i++)
            found = strcmp(names[i]->d_name, sb->name) == 0;
        if (!sb->scope.gone && !found) {
            px__sb_gone(set, sb);
            moved = 1;
        }
    }
    for (int i = 0; i < n; i++) {
        const char *name = names[i]->d_name;
        char path[PATH_MAX];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode) || strlen(name) > PX_SB_NAME_MAX)
            continue;
        px_sandbox_t *sb = px__sb_named(set, name);
        char err[1536]; /* a CA's refusal names the allowlist's path and entry */
        if (sb != NULL) {
            moved |= px__sb_reload(set, sb);
            kept++;
        } else if (set->n >= PX_SB_MAX) {
            px_diag(PX_DIAG_ERROR, "sandbox %s: more than %d sandboxes", name, PX_SB_MAX);
            rc = -1;
        } else if (px__sb_add(set, name, err, sizeof(err)) != 0) {
            px_diag(PX_DIAG_ERROR, "%s", err);
            rc = -1;
        } else {
            added++;
        }
    }
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    if (moved)
        px_client_sandboxes_changed(set->ctx);
    px_diag(startup ? PX_DIAG_INFO : PX_DIAG_WARN, "sandboxes %s: %zu in force (%zu new, %zu re-read)",
            dir, set->n, added, kept);
    return startup ? rc : 0;
}

px_sandbox_t *px_sandbox_for_addr(px_sandboxes_t *set, const uint8_t addr[16])
{
    for (px_sandbox_t *sb = set->list; sb != NULL; sb = sb->next)
        if (px_scope_holds(&sb->scope, addr))
            return sb;
    return NULL;
}

px_scope_t *px_sandbox_scope_for(px_ctx_t *ctx, const uint8_t src[16])
{
    px_scope_rdlock(); /* a reload on the engine's loop may be changing the list */
    px_sandbox_t *sb = px_sandbox_for_addr(ctx->scope_arg, src);
    px_scope_t *s = sb != NULL ? px_scope_ref(&sb->scope) : NULL; /* before it can go */
    px_scope_unlock();
    return s;
}

px_sandbox_t *px_sandbox_for(px_sandboxes_t *set, const struct sockaddr *src)
{
    uint8_t addr[16];
    if (px_srcnet_addr(src, addr) != 0)
        return NULL;
    return px_sandbox_for_addr(set, addr);
}

int px_sandboxes_kick_logs(px_sandboxes_t *set, int force)
{
    int left = 0;
    if (__atomic_load_n(&set->list, __ATOMIC_ACQUIRE) == NULL)
        return 0; /* no lock per loop turn without sandboxes */
    px_scope_rdlock();
    for (px_sandbox_t *sb = set->list; sb != NULL; sb = sb->next)
        if (sb->scope.log != NULL && (force || px_log_touched(sb->scope.log)))
            left |= px_log_kick(sb->scope.log, force);
    px_scope_unlock();
    return left;
}

void px_sandboxes_stop(px_sandboxes_t *set)
{
    for (px_sandbox_t *sb = set->list; sb != NULL; sb = sb->next)
        px_upmgr_close_idle(sb->scope.up);
}

void px_sandboxes_free(px_sandboxes_t *set)
{
    while (set->list != NULL) {
        px_sandbox_t *sb = set->list;
        set->list = sb->next;
        if (!sb->scope.gone)
            px_scope_unref(&sb->scope);
        px_upmgr_free(sb->scope.up);
        addon_budget_table_free(sb->scope.budgets);
        free(sb);
    }
}
