/*
 * newfile.c - files written as fresh inodes and renamed into place, and a
 * log file opened for appending without following a link (newfile.h says
 * why).
 */
#include "config.h"

#include "newfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int newfile_open(struct newfile *nf, const char *path, mode_t mode)
{
    const char *slash = strrchr(path, '/');
    size_t dlen = slash != NULL ? (size_t)(slash - path) + 1 : 0;
    int fd;

    nf->fd = -1;
    nf->tmp[0] = '\0';
    if (path[0] == '\0' || path[strlen(path) - 1] == '/') {
        errno = EISDIR;
        return -1;
    }
    if ((size_t)snprintf(nf->path, sizeof(nf->path), "%s", path) >=
            sizeof(nf->path) ||
        (size_t)snprintf(nf->tmp, sizeof(nf->tmp), "%.*s.%s.XXXXXX",
                         (int)dlen, path, path + dlen) >= sizeof(nf->tmp)) {
        nf->tmp[0] = '\0';
        errno = ENAMETOOLONG;
        return -1;
    }
    /* O_CREAT|O_EXCL with mode 0600 under a random name: a link or a file
     * already there (planted, or left by a crash) is never opened */
    fd = mkostemp(nf->tmp, O_CLOEXEC);
    if (fd < 0) {
        nf->tmp[0] = '\0';
        return -1;
    }
    if (fchmod(fd, mode) < 0) {
        int e = errno;

        close(fd);
        (void)unlink(nf->tmp);
        nf->tmp[0] = '\0';
        errno = e;
        return -1;
    }
    nf->fd = fd;
    return 0;
}

void newfile_discard(struct newfile *nf)
{
    int e = errno;

    if (nf->fd >= 0)
        close(nf->fd);
    nf->fd = -1;
    if (nf->tmp[0] != '\0')
        (void)unlink(nf->tmp);
    nf->tmp[0] = '\0';
    errno = e;
}

/* fsync the directory holding path: the rename is then durable */
static int sync_dir(const char *path)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    int dfd, rc;

    if (slash == NULL)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == path)
        snprintf(dir, sizeof(dir), "/");
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -1;
    rc = fsync(dfd);
    if (rc < 0) {
        int e = errno;

        close(dfd);
        errno = e;
        return -1;
    }
    close(dfd);
    return 0;
}

int newfile_commit(struct newfile *nf, bool sync, const char **what)
{
    const char *step = "fsync";
    int fd = nf->fd;

    nf->fd = -1;
    if (sync && fsync(fd) < 0)
        goto fail;
    step = "write";
    if (close(fd) < 0) {
        fd = -1;
        goto fail;
    }
    fd = -1;
    step = "rename";
    if (rename(nf->tmp, nf->path) < 0)
        goto fail;
    nf->tmp[0] = '\0';
    if (sync && sync_dir(nf->path) < 0) {
        if (what != NULL)
            *what = "directory fsync";
        return -1;
    }
    return 0;
fail:
    if (what != NULL)
        *what = step;
    nf->fd = fd;
    newfile_discard(nf);
    return -1;
}

int newfile_open_append(const char *path, mode_t mode)
{
    struct stat sb;
    bool created = true;
    int fd, e;

    /* O_NONBLOCK: a FIFO with no reader fails (ENXIO) instead of
     * blocking the start */
    fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW |
                        O_NONBLOCK | O_CLOEXEC,
              mode);
    if (fd < 0 && errno == EEXIST) {
        created = false;
        fd = open(path,
                  O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    }
    if (fd < 0)
        return -1;
    if (fstat(fd, &sb) < 0)
        goto fail;
    if (S_ISREG(sb.st_mode)) {
        if (sb.st_nlink != 1) {
            errno = EMLINK;
            goto fail;
        }
    } else if (!S_ISCHR(sb.st_mode)) {
        /* a terminal or /dev/null is fine: only root makes those */
        errno = EINVAL;
        goto fail;
    }
    if (created && fchmod(fd, mode) < 0)
        goto fail;
    if (fcntl(fd, F_SETFL, O_WRONLY | O_APPEND) < 0)
        goto fail;
    return fd;
fail:
    e = errno;
    close(fd);
    errno = e;
    return -1;
}

const char *newfile_append_strerror(int e)
{
    switch (e) {
    case ELOOP:
        return "a symbolic link (refused: name the file itself)";
    case EMLINK:
        return "a file with more than one name (a hard link: refused)";
    case EINVAL:
        return "neither a regular file nor a character device (refused)";
    default:
        return strerror(e);
    }
}
