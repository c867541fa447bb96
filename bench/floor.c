/*
 * floor: a measuring instrument for `make bench-copy`, not a product.
 *
 * It copies a tree of directories and regular files with the least kernel
 * work a faithful copy needs per file: fstatat of the entry; open, read and
 * close of the source; open(O_CREAT|O_EXCL), write, futimens and close of
 * the destination; directories are made with their mode. Nothing else:
 * no symlinks, hard links, xattrs, sparse files, ownership, resume, error
 * recovery, temporary names or checks. Its time is the "limit" column of
 * the benchmark table: how fast this machine copies the data set at all,
 * next to how fast rsa copy and its peers do.
 *
 * Threads take tasks from one queue: a task lists a directory (queueing its
 * subdirectories and its files in batches of BATCH) or copies one batch of
 * files, so files of one directory spread over every thread.
 *
 * Usage: floor THREADS SRC DST (DST an existing directory).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BATCH 64
#define BUFSZ (1 << 20)

struct task {
	struct task *next;
	char *src, *dst;      /* directory paths */
	int n;                /* 0: list the directory; else copy names[] */
	char *names[BATCH];
};

static struct task *head;
static int pending; /* tasks queued or running */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void die(const char *what, const char *path)
{
	fprintf(stderr, "floor: %s %s: %s\n", what, path, strerror(errno));
	exit(1);
}

static void push(struct task *t)
{
	pthread_mutex_lock(&mu);
	t->next = head;
	head = t;
	pending++;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
}

static char *join(const char *dir, const char *name)
{
	char *p;
	if (asprintf(&p, "%s/%s", dir, name) < 0)
		die("asprintf", name);
	return p;
}

static void copy_file(int sfd, int dfd, const char *name, char *buf)
{
	struct stat st;
	if (fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		die("fstatat", name);
	int in = openat(sfd, name, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		die("open", name);
	int out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st.st_mode & 07777);
	if (out < 0)
		die("create", name);
	for (;;) {
		ssize_t n = read(in, buf, BUFSZ);
		if (n < 0)
			die("read", name);
		if (n == 0)
			break;
		for (ssize_t off = 0; off < n;) {
			ssize_t m = write(out, buf + off, n - off);
			if (m < 0)
				die("write", name);
			off += m;
		}
	}
	close(in);
	struct timespec ts[2] = {st.st_atim, st.st_mtim};
	if (futimens(out, ts) < 0)
		die("futimens", name);
	if (close(out) < 0)
		die("close", name);
}

static void list_dir(struct task *t)
{
	DIR *d = opendir(t->src);
	if (d == NULL)
		die("opendir", t->src);
	struct task *batch = NULL;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (e->d_type == DT_DIR) {
			char *s = join(t->src, e->d_name), *ds = join(t->dst, e->d_name);
			struct stat st;
			if (stat(s, &st) < 0)
				die("stat", s);
			if (mkdir(ds, st.st_mode & 07777) < 0)
				die("mkdir", ds);
			struct task *c = calloc(1, sizeof *c);
			c->src = s;
			c->dst = ds;
			push(c);
			continue;
		}
		if (batch == NULL) {
			batch = calloc(1, sizeof *batch);
			batch->src = strdup(t->src);
			batch->dst = strdup(t->dst);
		}
		batch->names[batch->n++] = strdup(e->d_name);
		if (batch->n == BATCH) {
			push(batch);
			batch = NULL;
		}
	}
	if (batch != NULL)
		push(batch);
	closedir(d);
}

static void copy_batch(struct task *t, char *buf)
{
	int sfd = open(t->src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int dfd = open(t->dst, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (sfd < 0 || dfd < 0)
		die("open directory", t->src);
	for (int i = 0; i < t->n; i++) {
		copy_file(sfd, dfd, t->names[i], buf);
		free(t->names[i]);
	}
	close(sfd);
	close(dfd);
}

static void *worker(void *arg)
{
	(void)arg;
	char *buf = malloc(BUFSZ);
	for (;;) {
		pthread_mutex_lock(&mu);
		while (head == NULL && pending > 0)
			pthread_cond_wait(&cv, &mu);
		if (head == NULL) {
			pthread_mutex_unlock(&mu);
			break;
		}
		struct task *t = head;
		head = t->next;
		pthread_mutex_unlock(&mu);
		if (t->n == 0)
			list_dir(t);
		else
			copy_batch(t, buf);
		free(t->src);
		free(t->dst);
		free(t);
		pthread_mutex_lock(&mu);
		if (--pending == 0)
			pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&mu);
	}
	free(buf);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: floor THREADS SRC DST\n");
		return 2;
	}
	int n = atoi(argv[1]);
	if (n < 1 || n > 256) {
		fprintf(stderr, "floor: THREADS must be 1..256\n");
		return 2;
	}
	struct task *root = calloc(1, sizeof *root);
	root->src = strdup(argv[2]);
	root->dst = strdup(argv[3]);
	push(root);
	pthread_t th[256];
	for (int i = 0; i < n; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	return 0;
}
