/* Resolver probe for tests/integration/test_dns.sh: resolves a name with the C library's own
 * getaddrinfo (AF_UNSPEC, as most programs do) and prints one address per line. Built twice,
 * against glibc and statically against musl, to check both stub resolvers accept our answers.
 * Exit 0 with the addresses, 2 with the getaddrinfo error on stderr, 1 on bad usage. */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

int main(int argc, char **argv)
{
    struct addrinfo hints;
    struct addrinfo *res = NULL;
    struct addrinfo *ai;
    char text[INET6_ADDRSTRLEN];
    int rc;

    if (argc != 2) {
        fprintf(stderr, "usage: %s NAME\n", argv[0]);
        return 1;
    }
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    rc = getaddrinfo(argv[1], "443", &hints, &res);
    if (rc != 0) {
        fprintf(stderr, "getaddrinfo(%s): %s\n", argv[1], gai_strerror(rc));
        return 2;
    }
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        const void *addr;

        if (ai->ai_family == AF_INET)
            addr = &((const struct sockaddr_in *)ai->ai_addr)->sin_addr;
        else if (ai->ai_family == AF_INET6)
            addr = &((const struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;
        else
            continue;
        if (inet_ntop(ai->ai_family, addr, text, sizeof(text)) != NULL)
            printf("%s\n", text);
    }
    freeaddrinfo(res);
    return 0;
}
