/*
 * creater: the tests' multi-threaded creator, one process as glusterfsd is.
 * usage: creater DIR THREADS FILES FUNC
 * Each of THREADS threads, started together, creates FILES new files in DIR
 * by FUNC: open, open64 (relative to the cwd, DIR), openat, openat64 (relative
 * to an fd of DIR, the cwd "/"), openat-cwd (relative, AT_FDCWD, the cwd DIR). FUNC spread (one thread)
 * makes FILES subdirectories of DIR and creates a file in each with open.
 * CREATER_PAUSE_MS, if set, pauses each thread that long after each create
 * before its next: a client's round trip, during which it has none in flight.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *func;
static int files, dirfd_, pause_ms;
static pthread_barrier_t start;

static int create(const char *name)
{
	int flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC;
	if (!strcmp(func, "open"))
		return open(name, flags, 0644);
	if (!strcmp(func, "open64"))
		return open64(name, flags, 0644);
	if (!strcmp(func, "openat"))
		return openat(dirfd_, name, flags, 0644);
	if (!strcmp(func, "openat64"))
		return openat64(dirfd_, name, flags, 0644);
	if (!strcmp(func, "openat-cwd"))
		return openat(AT_FDCWD, name, flags, 0644);
	fprintf(stderr, "creater: unknown FUNC %s\n", func);
	exit(2);
}

static void *run(void *arg)
{
	char name[64];
	pthread_barrier_wait(&start);
	for (int i = 0; i < files; i++) {
		int fd;
		if (!strcmp(func, "spread")) {
			snprintf(name, sizeof name, "d%d", i);
			if (mkdir(name, 0755) != 0 || (strcat(name, "/f"), fd = open(name, O_WRONLY | O_CREAT, 0644)) < 0) {
				perror(name);
				exit(1);
			}
		} else {
			snprintf(name, sizeof name, "%s-t%ld-%d", func, (long)arg, i);
			if ((fd = create(name)) < 0) {
				perror(name);
				exit(1);
			}
		}
		close(fd);
		if (pause_ms > 0)
			usleep((useconds_t)pause_ms * 1000);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: creater DIR THREADS FILES FUNC\n");
		return 2;
	}
	int threads = atoi(argv[2]);
	files = atoi(argv[3]);
	if (getenv("CREATER_PAUSE_MS"))
		pause_ms = atoi(getenv("CREATER_PAUSE_MS"));
	func = argv[4];
	pthread_t t[64];
	/* openat and openat64 run in "/", so a shim resolving their fd as the cwd fails */
	int at = !strcmp(func, "openat") || !strcmp(func, "openat64");
	if (threads < 1 || threads > 64 || (dirfd_ = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    chdir(at ? "/" : argv[1]) != 0) {
		perror(argv[1]);
		return 2;
	}
	pthread_barrier_init(&start, NULL, threads);
	for (long i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, run, (void *)i);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	return 0;
}
