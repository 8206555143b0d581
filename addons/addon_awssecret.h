/* Values fetched from AWS for "value_from" (docs/replacements.md): the request airlock sends
 * (Secrets Manager GetSecretValue or SSM GetParameter, JSON 1.1 over POST /, signed with SigV4
 * by signing/), the proxy's own AWS credentials (environment, then the shared credentials
 * file), the endpoint, and the answer's parser. No I/O on the network here: the proxy sends
 * the request with its upstream client (proxy/px_secretfetch.c).
 *
 * Nothing here ever puts a real value, a secret key or a token into an error text; an AWS
 * error is named by its type only (its message could quote anything). */
#ifndef ADDON_AWSSECRET_H
#define ADDON_AWSSECRET_H

#include <stddef.h>
#include <stdint.h>

#define ADDON_AWSSECRET_ID_MAX 2048         /* bytes of a secret id, ARN or parameter name */
#define ADDON_AWSSECRET_REGION_MAX 32       /* bytes of a region name */
#define ADDON_AWSSECRET_KEY_MAX 8192        /* bytes of a json_key */
#define ADDON_AWSSECRET_HOST_MAX 253        /* bytes of the endpoint's host */
#define ADDON_AWSSECRET_BODY_MAX 16384      /* bytes of the request body (ids escaped) */
#define ADDON_AWSSECRET_RESP_MAX 262144     /* bytes of an answer (a secret is at most 64 KiB) */
#define ADDON_AWSSECRET_AKID_MAX 128        /* bytes of an access key id */
#define ADDON_AWSSECRET_SECRET_MAX 1024     /* bytes of a secret access key (sig_v4's cap) */
#define ADDON_AWSSECRET_TOKEN_MAX 4096      /* bytes of a session token */
#define ADDON_AWSSECRET_AUTH_MAX 512        /* bytes of the Authorization value */
#define ADDON_AWSSECRET_CRED_FILE_MAX 65536 /* bytes of a shared credentials file */

/* One source as the replacements file names it; every string is borrowed, NUL-terminated. */
typedef struct addon_awssecret_src {
    int ssm;              /* 0: Secrets Manager GetSecretValue; 1: SSM GetParameter */
    const char *id;       /* SecretId (name or ARN), or the parameter Name */
    const char *region;   /* NULL: AWS_REGION, then AWS_DEFAULT_REGION */
    const char *json_key; /* Secrets Manager: the key of a JSON SecretString; NULL: all of it */
    int with_decryption;  /* SSM: WithDecryption */
} addon_awssecret_src_t;

/* The proxy's own credentials (real: wipe with addon_awssecret_creds_wipe). */
typedef struct addon_awssecret_creds {
    char akid[ADDON_AWSSECRET_AKID_MAX + 1];
    char secret[ADDON_AWSSECRET_SECRET_MAX + 1];
    char token[ADDON_AWSSECRET_TOKEN_MAX + 1]; /* "" when there is none */
} addon_awssecret_creds_t;

/* A signed request, ready for the upstream client. */
typedef struct addon_awssecret_req {
    char host[ADDON_AWSSECRET_HOST_MAX + 1]; /* to connect to */
    uint16_t port;
    int tls;
    char host_header[ADDON_AWSSECRET_HOST_MAX + 8]; /* host, or host:port off the default */
    const char *target;                             /* X-Amz-Target (static) */
    char amz_date[17];                              /* X-Amz-Date, YYYYMMDDTHHMMSSZ */
    char body[ADDON_AWSSECRET_BODY_MAX];
    size_t blen;
    char auth[ADDON_AWSSECRET_AUTH_MAX];
    size_t alen;
} addon_awssecret_req_t;

#define ADDON_AWSSECRET_CONTENT_TYPE "application/x-amz-json-1.1"

/* Reads the credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN)
 * when both are set, else the [AWS_PROFILE or default] section of AWS_SHARED_CREDENTIALS_FILE
 * (default $HOME/.aws/credentials). 0, or PX_ENOENT/PX_EPARSE/PX_ETOOBIG with why in err
 * (never a key). */
int addon_awssecret_creds_load(addon_awssecret_creds_t *c, char *err, size_t errlen);

/* Wipes c. */
void addon_awssecret_creds_wipe(addon_awssecret_creds_t *c);

/* The endpoint URL of the environment for this kind of source: AWS_ENDPOINT_URL_SECRETS_MANAGER
 * or AWS_ENDPOINT_URL_SSM, then AWS_ENDPOINT_URL; NULL when none is set (the AWS default). */
const char *addon_awssecret_endpoint_env(int ssm);

/* The region of src: its own, else AWS_REGION, else AWS_DEFAULT_REGION; NULL when none. */
const char *addon_awssecret_region(const addon_awssecret_src_t *src);

/* Builds and signs the request for src in region at time now (seconds since the epoch) to
 * endpoint (NULL: https://secretsmanager.REGION.amazonaws.com or https://ssm.REGION...).
 * 0, or PX_ECONFIG (bad endpoint or region), PX_ETOOBIG, PX_ECRYPTO with why in err. */
int addon_awssecret_request(const addon_awssecret_src_t *src, const char *region,
                            const addon_awssecret_creds_t *c, const char *endpoint, int64_t now,
                            addon_awssecret_req_t *out, char *err, size_t errlen);

/* Reads the answer (status, body[0..len) borrowed) for src: on 200 the value (SecretString, or
 * its json_key; the parameter's Value) into value[0..cap) as *vlen bytes (no NUL added). 0; or
 * PX_EPARSE/PX_ETOOBIG/PX_ENOENT with why in err; *retry is 1 when asking again later may
 * help (throttling, a 5xx), else 0. */
int addon_awssecret_parse(const addon_awssecret_src_t *src, int status, const char *body,
                          size_t len, char *value, size_t cap, size_t *vlen, int *retry, char *err,
                          size_t errlen);

/* The proxy's store of fetched values, as the replacements loader asks it (one process-wide
 * registration; none: the AWS sources are refused, e.g. in `airlock check`). The callback gives
 * 0 and *value (borrowed for the call), or a negative code with why filled (never a value).
 * A value it does not hold yet it records as wanted and answers with a stand-in: the caller
 * then drops that load, fetches, and loads again. */
typedef int (*addon_awssecret_lookup_cb)(void *arg, const addon_awssecret_src_t *src,
                                         unsigned refresh_seconds, const char **value, size_t *vlen,
                                         char *why, size_t whylen);

/* Registers cb (NULL: none) with arg (kept). */
void addon_awssecret_set_lookup(addon_awssecret_lookup_cb cb, void *arg);

/* Asks the registered store; PX_EUNSUPPORTED when none is registered. */
int addon_awssecret_lookup(const addon_awssecret_src_t *src, unsigned refresh_seconds,
                           const char **value, size_t *vlen, char *why, size_t whylen);

#endif
