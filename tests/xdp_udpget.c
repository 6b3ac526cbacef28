/*
 * xdp_udpget - a minimal memcached UDP client for tests/xdp_e2e.sh.
 *
 *   xdp_udpget [-t MS] [-n COUNT] [-c COMMAND] ADDR PORT [KEY]
 *
 * Sends "get KEY\r\n" (or COMMAND + "\r\n") behind an 8-byte frame header,
 * COUNT times in sequence, each with a new request id; checks each reply's
 * frame header (same id, sequence 0, one datagram) and that every reply is
 * identical; writes the first reply's text (after the header) to stdout.
 * Exit 0 when every request was answered, 1 otherwise (a line on stderr).
 */
#include "config.h"

#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    uint8_t req[600], rep[2048], first[2048];
    struct sockaddr_in sa;
    const char *cmd = NULL;
    /* a reply that is due: a ceiling only a hang (or a loss) reaches, not
     * a latency bound; -t 300 where silence is the expected answer */
    int timeout = 30000, count = 1, c, fd, i;
    size_t rlen, flen = 0;
    ssize_t n;

    while ((c = getopt(argc, argv, "t:n:c:")) != -1) {
        switch (c) {
        case 't': timeout = atoi(optarg); break;
        case 'n': count = atoi(optarg); break;
        case 'c': cmd = optarg; break;
        default: goto usage;
        }
    }
    if (argc - optind != 3 - (cmd != NULL))
        goto usage;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)atoi(argv[optind + 1]));
    if (inet_pton(AF_INET, argv[optind], &sa.sin_addr) != 1)
        goto usage;
    if (cmd)
        rlen =
            (size_t)snprintf((char *)req + 8, sizeof(req) - 8, "%s\r\n", cmd);
    else
        rlen = (size_t)snprintf((char *)req + 8, sizeof(req) - 8, "get %s\r\n",
                                argv[optind + 2]);
    if (rlen >= sizeof(req) - 8)
        goto usage;
    rlen += 8;
    fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
        perror("xdp_udpget");
        return 1;
    }
    for (i = 0; i < count; i++) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        uint16_t id = (uint16_t)(0x4d00 + i);

        req[0] = (uint8_t)(id >> 8);
        req[1] = (uint8_t)id;
        memcpy(req + 2, "\0\0\0\x01\0\0", 6);
        if (send(fd, req, rlen, 0) != (ssize_t)rlen) {
            perror("xdp_udpget: send");
            return 1;
        }
        for (;;) {
            if (poll(&p, 1, timeout) <= 0) {
                fprintf(stderr, "xdp_udpget: request %d: no reply\n", i);
                return 1;
            }
            n = recv(fd, rep, sizeof(rep), 0);
            if (n >= 8 && rep[0] == req[0] && rep[1] == req[1])
                break; /* a late reply to an earlier request is skipped */
        }
        if (memcmp(rep + 2, "\0\0\0\x01\0\0", 6) != 0) {
            fprintf(stderr, "xdp_udpget: bad frame header in reply\n");
            return 1;
        }
        if (i == 0) {
            flen = (size_t)n;
            memcpy(first, rep, flen);
        } else if ((size_t)n != flen || memcmp(first + 2, rep + 2, flen - 2)) {
            fprintf(stderr, "xdp_udpget: reply %d differs from the first\n", i);
            return 1;
        }
    }
    fwrite(first + 8, 1, flen - 8, stdout);
    return 0;
usage:
    fprintf(stderr, "usage: xdp_udpget [-t MS] [-n COUNT] [-c COMMAND] ADDR "
                    "PORT [KEY]\n");
    return 2;
}
