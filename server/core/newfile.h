/*
 * newfile.h - files the server writes (port file, pid file, dump), each
 * created as a fresh inode under a name nobody could guess, given its mode
 * whatever the umask, then renamed over its path.
 *
 * The server often runs these as root, before it drops privileges, in
 * directories another user may write (a pid directory owned by the
 * service user).  A fixed temporary name (PATH.tmp) opened with O_TRUNC
 * would follow a link planted there and write as root wherever it points;
 * a leftover from a crash would be written through too.  Here the
 * temporary name is PATH's directory, a dot, PATH's name and a random
 * suffix, created with O_CREAT|O_EXCL (which never follows a link and
 * fails on any existing name: mkostemp), so nothing planted is written,
 * and nothing planted stops the write either.  The rename then replaces
 * PATH itself, even when PATH is a link, and never what a link points to.
 */
#ifndef MDC_NEWFILE_H
#define MDC_NEWFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct newfile {
    int fd;          /* open for writing; -1 once committed or discarded */
    char tmp[4096];  /* the temporary name, in PATH's directory */
    char path[4096]; /* the final name */
};

/* Create nf's temporary file for path with exactly mode (fchmod: not the
 * umask).  0, or -1 with errno (ENAMETOOLONG for a path that does not fit). */
int newfile_open(struct newfile *nf, const char *path, mode_t mode);
/* With sync, fsync the file before and its directory after the rename.
 * Close, rename over the path.  0, or -1 with errno and the temporary name
 * removed (the path untouched).  *what, when not NULL, names the step that
 * failed ("write", "fsync", "rename", "directory fsync"); after a failed
 * "directory fsync" the file is in place (renamed) but maybe not durable. */
int newfile_commit(struct newfile *nf, bool sync, const char **what);
/* Close and remove the temporary file (a failed write). */
void newfile_discard(struct newfile *nf);

/*
 * Open path for appending (a log file) without following a link: a
 * symbolic link at path is refused (ELOOP), and so is anything but a
 * regular file with one name (a hard link: EMLINK; a directory, a device:
 * EINVAL), so root never appends to a file another user pointed it at.  A
 * file created here gets exactly mode.  Returns the descriptor or -1.
 */
int newfile_open_append(const char *path, mode_t mode);
/* What newfile_open_append()'s errno e means, for an error message. */
const char *newfile_append_strerror(int e);

#endif
