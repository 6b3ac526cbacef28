/*
 * test_newfile.c - the files the server writes (server/core/newfile.h), in
 * a private directory (mode 0700, not sticky: the kernel's protected
 * links and files do not apply there, so these fail on code that writes
 * through a fixed PATH.tmp whatever the sysctls say).
 *
 * At the old fixed temporary name PATH.tmp, and at PATH itself, a test
 * plants a symbolic link to a victim, a hard link to it, a regular file
 * owned by another user (as root; as another user the file is the test's
 * own), a directory and a FIFO: the write succeeds, PATH ends up a regular
 * file of its own with exactly the mode asked (under umask 000 and 077),
 * and neither the victim nor what was planted changes.  The log file is
 * opened for appending but never through a symbolic or hard link, a FIFO
 * or a directory.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "server/core/newfile.h"

static char dir[] = "/tmp/mdc-newfile-XXXXXX";
static char path[300], tmp[300], victim[300];

static int setup(void **state)
{
    (void)state;
    if (mkdtemp(dir) == NULL)
        return -1;
    snprintf(path, sizeof(path), "%s/ports", dir);
    snprintf(tmp, sizeof(tmp), "%s/ports.tmp", dir);
    snprintf(victim, sizeof(victim), "%s/victim", dir);
    return 0;
}

static int teardown(void **state)
{
    char cmd[400];
    (void)state;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd);
}

static void put(const char *p, const char *text, mode_t mode)
{
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    assert_int_equal(chmod(p, mode), 0);
}

static void expect(const char *p, const char *text)
{
    char buf[256];
    int fd = open(p, O_RDONLY);
    ssize_t n;
    assert_true(fd >= 0);
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    assert_true(n >= 0);
    buf[n] = '\0';
    assert_string_equal(buf, text);
}

/* The directory's entries but ".", ".." and the names given */
static int others(const char *a, const char *b, const char *c)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
        const char *x = e->d_name;
        if (strcmp(x, ".") == 0 || strcmp(x, "..") == 0 ||
            (a != NULL && strcmp(x, a) == 0) ||
            (b != NULL && strcmp(x, b) == 0) ||
            (c != NULL && strcmp(x, c) == 0))
            continue;
        n++;
    }
    closedir(d);
    return n;
}

static void write_file(const char *p, const char *text, mode_t mode)
{
    struct newfile nf;
    assert_int_equal(newfile_open(&nf, p, mode), 0);
    assert_int_equal(write(nf.fd, text, strlen(text)),
                     (ssize_t)strlen(text));
    assert_int_equal(newfile_commit(&nf, true, NULL), 0);
}

/* PATH a regular file of its own (not a link, one name), mode exactly m */
static void expect_own_file(const char *p, mode_t m, const char *text)
{
    struct stat sb;
    assert_int_equal(lstat(p, &sb), 0);
    assert_true(S_ISREG(sb.st_mode));
    assert_int_equal(sb.st_nlink, 1);
    assert_int_equal(sb.st_mode & 07777, m);
    assert_int_equal(sb.st_uid, geteuid());
    expect(p, text);
}

enum plant { P_SYMLINK, P_HARDLINK, P_OTHER_USER, P_DIR, P_FIFO, P_NPLANT };
static const char *const plant_names[P_NPLANT] = {
    "a symbolic link", "a hard link", "another user's file", "a directory",
    "a FIFO"};

static void plant(enum plant k, const char *at)
{
    switch (k) {
    case P_SYMLINK:
        assert_int_equal(symlink("victim", at), 0);
        break;
    case P_HARDLINK:
        assert_int_equal(link(victim, at), 0);
        break;
    case P_OTHER_USER:
        put(at, "theirs\n", 0666);
        if (geteuid() == 0)
            assert_int_equal(chown(at, 65534, 65534), 0);
        break;
    case P_DIR:
        assert_int_equal(mkdir(at, 0777), 0);
        break;
    case P_FIFO:
        assert_int_equal(mkfifo(at, 0666), 0);
        break;
    default:
        fail();
    }
}

/* what was planted at 'at' is as it was */
static void planted_intact(enum plant k, const char *at)
{
    struct stat sb;
    char buf[64];
    ssize_t n;
    assert_int_equal(lstat(at, &sb), 0);
    switch (k) {
    case P_SYMLINK:
        assert_true(S_ISLNK(sb.st_mode));
        n = readlink(at, buf, sizeof(buf) - 1);
        assert_int_equal(n, 6);
        break;
    case P_HARDLINK:
        assert_true(S_ISREG(sb.st_mode));
        assert_int_equal(sb.st_nlink, 2);
        break;
    case P_OTHER_USER:
        assert_true(S_ISREG(sb.st_mode));
        if (geteuid() == 0)
            assert_int_equal(sb.st_uid, 65534);
        expect(at, "theirs\n");
        break;
    case P_DIR:
        assert_true(S_ISDIR(sb.st_mode));
        break;
    case P_FIFO:
        assert_true(S_ISFIFO(sb.st_mode));
        break;
    default:
        fail();
    }
}

/* Something planted at the old fixed temporary name PATH.tmp: ignored */
static void test_planted_at_tmp(void **state)
{
    (void)state;
    for (int k = 0; k < P_NPLANT; k++) {
        print_message("PATH.tmp is %s\n", plant_names[k]);
        put(victim, "precious\n", 0600);
        plant((enum plant)k, tmp);
        write_file(path, "tcp 127.0.0.1:1\n", 0644);
        expect_own_file(path, 0644, "tcp 127.0.0.1:1\n");
        expect(victim, "precious\n");
        planted_intact((enum plant)k, tmp);
        assert_int_equal(others("ports", "ports.tmp", "victim"), 0);
        assert_int_equal(remove(tmp), 0);
        assert_int_equal(unlink(path), 0);
    }
    assert_int_equal(unlink(victim), 0);
}

/* Something planted at PATH itself is replaced, never written through */
static void test_planted_at_path(void **state)
{
    (void)state;
    for (int k = 0; k < P_NPLANT; k++) {
        if (k == P_DIR)
            continue; /* rename cannot replace a directory: below */
        print_message("PATH is %s\n", plant_names[k]);
        put(victim, "precious\n", 0600);
        plant((enum plant)k, path);
        write_file(path, "1234\n", 0644);
        expect_own_file(path, 0644, "1234\n");
        expect(victim, "precious\n");
        assert_int_equal(others("ports", "victim", NULL), 0);
        assert_int_equal(unlink(path), 0);
    }
    /* a directory at PATH: the rename fails, nothing is left behind */
    struct newfile nf;
    const char *what = NULL;
    assert_int_equal(mkdir(path, 0755), 0);
    assert_int_equal(newfile_open(&nf, path, 0644), 0);
    assert_int_equal(newfile_commit(&nf, false, &what), -1);
    assert_string_equal(what, "rename");
    assert_int_equal(others("ports", "victim", NULL), 0);
    assert_int_equal(rmdir(path), 0);
    assert_int_equal(unlink(victim), 0);
}

/* The mode asked, whatever the umask */
static void test_mode_not_umask(void **state)
{
    static const mode_t masks[] = {0, 022, 077, 0777};
    static const mode_t modes[] = {0644, 0600, 0640};
    (void)state;
    for (size_t i = 0; i < sizeof(masks) / sizeof(masks[0]); i++)
        for (size_t j = 0; j < sizeof(modes) / sizeof(modes[0]); j++) {
            mode_t old = umask(masks[i]);
            write_file(path, "x", modes[j]);
            umask(old);
            expect_own_file(path, modes[j], "x");
            /* and again over the file now there */
            old = umask(masks[i]);
            write_file(path, "y", modes[j]);
            umask(old);
            expect_own_file(path, modes[j], "y");
            assert_int_equal(unlink(path), 0);
        }
}

/* Two writers at once, and a discarded write: each its own name, nothing
 * left; a name too long for a temporary name is refused cleanly */
static void test_names(void **state)
{
    struct newfile a, b;
    char lpath[600];
    (void)state;
    assert_int_equal(newfile_open(&a, path, 0644), 0);
    assert_int_equal(newfile_open(&b, path, 0644), 0);
    assert_string_not_equal(a.tmp, b.tmp);
    /* in PATH's directory, hidden, named after it */
    assert_int_equal(strncmp(a.tmp, dir, strlen(dir)), 0);
    assert_int_equal(strncmp(a.tmp + strlen(dir), "/.ports.", 8), 0);
    newfile_discard(&a);
    assert_int_equal(others(b.tmp + strlen(dir) + 1, NULL, NULL), 0);
    assert_int_equal(write(b.fd, "b", 1), 1);
    assert_int_equal(newfile_commit(&b, false, NULL), 0);
    expect(path, "b");
    assert_int_equal(others("ports", NULL, NULL), 0);
    assert_int_equal(unlink(path), 0);

    int n = snprintf(lpath, sizeof(lpath), "%s/", dir);
    memset(lpath + n, 'L', 250);
    lpath[n + 250] = '\0';
    assert_int_equal(newfile_open(&a, lpath, 0644), -1);
    assert_int_equal(errno, ENAMETOOLONG);
    assert_int_equal(others(NULL, NULL, NULL), 0);
    /* no directory to write in */
    snprintf(lpath, sizeof(lpath), "%s/no/such", dir);
    assert_int_equal(newfile_open(&a, lpath, 0644), -1);
    assert_int_equal(errno, ENOENT);
    /* a bare name is in the current directory */
    char cwd[400];
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    assert_int_equal(chdir(dir), 0);
    write_file("bare", "z", 0600);
    assert_int_equal(chdir(cwd), 0);
    snprintf(lpath, sizeof(lpath), "%s/bare", dir);
    expect_own_file(lpath, 0600, "z");
    assert_int_equal(unlink(lpath), 0);
}

/* The log file: appended to when it is a regular file of its own, made
 * with its mode when absent, refused when a link or a FIFO */
static void test_append(void **state)
{
    char logp[300];
    int fd;
    (void)state;
    snprintf(logp, sizeof(logp), "%s/log", dir);

    mode_t old = umask(0);
    fd = newfile_open_append(logp, 0640);
    umask(old);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "one\n", 4), 4);
    close(fd);
    expect_own_file(logp, 0640, "one\n");
    /* an existing file is appended to, its mode kept */
    assert_int_equal(chmod(logp, 0600), 0);
    fd = newfile_open_append(logp, 0640);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "two\n", 4), 4);
    close(fd);
    expect_own_file(logp, 0600, "one\ntwo\n");
    assert_int_equal(unlink(logp), 0);

    for (int k = 0; k < P_NPLANT; k++) {
        if (k == P_OTHER_USER)
            continue; /* a plain file: appended to, as any other */
        print_message("the log file is %s\n", plant_names[k]);
        put(victim, "precious\n", 0600);
        plant((enum plant)k, logp);
        errno = 0;
        assert_int_equal(newfile_open_append(logp, 0640), -1);
        switch (k) {
        case P_SYMLINK:
            assert_int_equal(errno, ELOOP);
            assert_non_null(strstr(newfile_append_strerror(errno),
                                   "symbolic link"));
            break;
        case P_HARDLINK:
            assert_int_equal(errno, EMLINK);
            assert_non_null(strstr(newfile_append_strerror(errno),
                                   "hard link"));
            break;
        case P_DIR:
            assert_int_equal(errno, EISDIR);
            break;
        case P_FIFO: /* no reader: refused at once, never waiting */
            assert_int_equal(errno, ENXIO);
            break;
        default:
            break;
        }
        expect(victim, "precious\n");
        planted_intact((enum plant)k, logp);
        assert_int_equal(remove(logp), 0);
    }
    assert_int_equal(unlink(victim), 0);
    /* a character device is fine (only root makes one) */
    fd = newfile_open_append("/dev/null", 0640);
    assert_true(fd >= 0);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_planted_at_tmp),
        cmocka_unit_test(test_planted_at_path),
        cmocka_unit_test(test_mode_not_umask),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_append),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
