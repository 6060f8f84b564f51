/* Locks between a store's writer, its creators and its readers (store_lock.h). */
#define _GNU_SOURCE /* F_OFD_SETLK (Linux 3.15, fcntl(2) "Open file description locks") */
#include "store_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Bytes locked, far past the end of any store (a lock may cover bytes past the end of a file;
 * fcntl(2)): the commit byte, held shared by readers and exclusively by a writer that flushes,
 * and the intent byte, held exclusively by a writer from the moment it wants to flush. */
#define LOCK_COMMIT_BYTE ((off_t)1 << 62)
#define LOCK_INTENT_BYTE (LOCK_COMMIT_BYTE + 1)
/* How often a waiting reader or writer tries again: short against a commit's flush (a few
 * milliseconds, docs/store.md) and long against the cost of the try (one system call). */
#define LOCK_RETRY_NS 2000000L
/* A creator tries again when the name it locked was moved on meanwhile; a few times suffice
 * (each time another creator finished in between), more is a loop. */
#define LOCK_CREATOR_TRIES 100

int store__lock_writer(int fd)
{
    return flock(fd, LOCK_EX | LOCK_NB);
}

int store__lock_creator(const char *tmp)
{
    for (int i = 0; i < LOCK_CREATOR_TRIES; i++) {
        int fd = open(tmp, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (fd < 0)
            return -1;
        if (store__lock_writer(fd) != 0) {
            int err = errno;
            close(fd);
            errno = err;
            return -1;
        }
        struct stat held, named;
        if (fstat(fd, &held) == 0 && stat(tmp, &named) == 0 && held.st_dev == named.st_dev &&
            held.st_ino == named.st_ino)
            return fd;
        close(fd); /* renamed into place or removed by the creator that held it: a new name */
    }
    errno = EAGAIN;
    return -1;
}

/* One byte's lock, taken without waiting: 0, or -1 with errno (EAGAIN: held by another). */
static int lock_byte(int fd, short type, off_t byte)
{
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = byte;
    fl.l_len = 1;
    return fcntl(fd, F_OFD_SETLK, &fl);
}

static bool held_by_another(int err)
{
    return err == EAGAIN || err == EACCES;
}

/* A file system without open file description locks (or without locks at all). */
static bool no_locks(int err)
{
    return err == EINVAL || err == ENOLCK || err == EOPNOTSUPP || err == ENOSYS;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void pause_briefly(void)
{
    struct timespec t = {0, LOCK_RETRY_NS};
    nanosleep(&t, NULL);
}

int store__hold_for_reading(int fd, double wait_s)
{
    double deadline = now_s() + wait_s;
    for (;;) {
        if (lock_byte(fd, F_RDLCK, LOCK_INTENT_BYTE) == 0) {
            int held = lock_byte(fd, F_RDLCK, LOCK_COMMIT_BYTE);
            int err = errno;
            lock_byte(fd, F_UNLCK, LOCK_INTENT_BYTE);
            if (held == 0)
                return 0;
            errno = err;
        }
        if (no_locks(errno))
            return 1;
        if (!held_by_another(errno))
            return -1;
        if (now_s() >= deadline) {
            errno = ETIMEDOUT;
            return -1;
        }
        pause_briefly();
    }
}

int store__exclude_readers(int fd)
{
    /* Only writers take the intent byte exclusively, and a store has one writer: readers hold
     * it shared for a moment only. */
    while (lock_byte(fd, F_WRLCK, LOCK_INTENT_BYTE) != 0) {
        if (no_locks(errno))
            return 1;
        if (!held_by_another(errno))
            return -1;
        pause_briefly();
    }
    while (lock_byte(fd, F_WRLCK, LOCK_COMMIT_BYTE) != 0) {
        if (no_locks(errno))
            return 1;
        if (!held_by_another(errno)) {
            int err = errno;
            lock_byte(fd, F_UNLCK, LOCK_INTENT_BYTE);
            errno = err;
            return -1;
        }
        pause_briefly();
    }
    return 0;
}

void store__admit_readers(int fd)
{
    lock_byte(fd, F_UNLCK, LOCK_COMMIT_BYTE);
    lock_byte(fd, F_UNLCK, LOCK_INTENT_BYTE);
}
