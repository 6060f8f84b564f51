/* The locks that let one sweep write a store while commands read it, and that keep two sweeps
 * from creating or writing the same store (docs/store.md, "Writers and readers"). Internal to
 * the store (src/sweep/store.c). */
#ifndef CLUSTERDSE_STORE_LOCK_H
#define CLUSTERDSE_STORE_LOCK_H

#include <stdbool.h>

/* The writer's lock: an exclusive flock(2) on the file open in `fd`, taken without waiting.
 * 0, or -1 with errno (EWOULDBLOCK: another writer holds it). */
int store__lock_writer(int fd);

/* Takes the writer's lock on `tmp`, the temporary a new store is written under, before anything
 * is written to it: opens (creating, never truncating) the name and locks it, and makes sure the
 * name still refers to the file locked (a creator that held it may have renamed it into place
 * meanwhile). The descriptor (open for reading and writing), or -1 with errno (EWOULDBLOCK:
 * another creator holds it). */
int store__lock_creator(const char *tmp);

/* A reader's hold on a store, from open to close, while no commit is being flushed: open file
 * description locks (fcntl F_OFD_SETLK) on two bytes far past the end of any store, which no
 * read or write touches. A reader waits while a writer announces a commit (the intent byte,
 * shared for a moment) and holds the commit byte shared; a writer takes the intent byte, so that
 * new readers wait, then the commit byte exclusively once the readers that have the store open
 * close it, flushes, and releases both. 0 when held, 1 when the file system offers no such
 * locks (then nothing is held: the reader reads as before), -1 with errno when `wait_s` seconds
 * passed (ETIMEDOUT) or a lock failed otherwise. */
int store__hold_for_reading(int fd, double wait_s);

/* The writer's side: keeps readers out until store__admit_readers. Waits as long as readers that
 * already have the store open keep it. `fd` must be open for writing. 0, 1 without locks (as
 * above), -1 with errno. */
int store__exclude_readers(int fd);
void store__admit_readers(int fd);

#endif
