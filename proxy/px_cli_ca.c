/* `airlock ca init`: the CA files in mitmproxy's layout. */
#include <stdio.h>
#include <string.h>

#include "ca/ca.h"
#include "proxy/px_cli.h"

const char px_cli_ca_usage[] = "  airlock ca init --confdir DIR    create the CA in DIR unless one is there\n";

int px_cli_ca(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "init") != 0) {
        fprintf(stderr, "airlock ca: usage: airlock ca init --confdir DIR\n");
        return 2;
    }
    const char *dir = NULL;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--confdir") == 0 && i + 1 < argc) {
            dir = argv[++i];
        } else {
            fprintf(stderr, "airlock ca init: unexpected argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (dir == NULL) {
        fprintf(stderr, "airlock ca init: --confdir DIR is required\n");
        return 2;
    }
    int result = 0;
    char err[512];
    if (ca_init_confdir(dir, &result, err, sizeof(err)) != 0) {
        fprintf(stderr, "airlock ca init: %s\n", err);
        return 1;
    }
    static const char *const what[] = {"exists", "created", "repaired"};
    printf("%s/%s: %s\n", dir, CA_FILE_KEY_CERT, what[result < 0 || result > 2 ? 0 : result]);
    return 0;
}
