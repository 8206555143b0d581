/* `airlock replay`, `airlock report`, `airlock suggest`: the operator's audit tools over
 * network logs (issue 19). Not written yet: every command says so and exits 2. */
#include <stdio.h>
#include <string.h>

#include "proxy/px_cli.h"

const char px_cli_audit_usage[] = "";

int px_cli_audit_handles(const char *cmd)
{
    (void)cmd;
    return 0;
}

int px_cli_audit(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr, "airlock: unknown command '%s' (see airlock --help)\n", argv[0]);
    return 2;
}
