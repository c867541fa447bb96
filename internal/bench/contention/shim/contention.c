/*
 * contention.c: an LD_PRELOAD shim for glusterfsd giving file creates in one
 * directory the cost they have on GPFS when many client nodes create there.
 *
 * Model: creates of new files in one directory are serialised, one at a time
 * per directory in arrival order (a ticket lock). n is the number of creates
 * in flight for the directory when a create arrives (itself, the one being
 * served and those waiting); once granted the directory it sleeps
 * cost(n) = local + revoke * (1 - 1/n), does the real open, then releases the
 * directory. With n clients contending, the directory's token was last held
 * by another client with probability 1 - 1/n, and moving it costs revoke. A
 * Linux client holds a directory's i_rwsem exclusively for an O_CREAT open, so
 * a client host has at most one create in flight per directory: n counts
 * contending client hosts. It is counted at arrival, not at the grant: when a
 * create is granted, the client whose create was just served has not sent
 * its next one yet, so a count then misses one contender (two hosts taking
 * turns would count 1, as one host alone does).
 *
 * Scope: open, open64, openat, openat64 with O_CREAT, of a file not there yet,
 * under the configured root and not under .glusterfs. The fortified __open_2
 * family aborts on O_CREAT, so never creates: left alone. Directory state is
 * per process (a brick is one multi-threaded glusterfsd); the stats file is a
 * sum merged under an flock, so processes sharing a configuration add up.
 *
 * Configuration: the file $RSA_CONTENTION_CONF, lines root=/abs/dir,
 * local_us=N, revoke_us=N, generation=N; re-read when its inode, size or mtime
 * changes; missing, the shim is off. Stats: <conf>.stats, lines generation,
 * creates, delay_us, overflow, inflight_N (N capped at 64); a new generation
 * starts them from zero.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NDIRS 4096 /* directories tracked; past that, creates pass through */
#define MAXN 64

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);
static open_fn real_open, real_open64;
static openat_fn real_openat, real_openat64;
static pthread_once_t once = PTHREAD_ONCE_INIT;
/* $RSA_CONTENTION_CONF and the files beside it; conf_path empty: off */
static char conf_path[PATH_MAX], stats_path[PATH_MAX + 16], tmp_path[PATH_MAX + 16], lock_path[PATH_MAX + 16];

struct conf {
	int enabled;
	long long local_us, revoke_us, generation;
	char root[PATH_MAX];
};
static pthread_mutex_t conf_mu = PTHREAD_MUTEX_INITIALIZER;
static struct conf conf;    /* guarded by conf_mu, as is conf_st */
static struct stat conf_st; /* the file conf was read from */

struct stats {
	long long generation, creates, delay_us, overflow, inflight[MAXN + 1];
};
static pthread_mutex_t stats_mu = PTHREAD_MUTEX_INITIALIZER;

/* A directory's ticket lock: next - serving creates are in flight. */
struct dir {
	int used;
	dev_t dev; /* the directory's identity */
	ino_t ino;
	unsigned long next, serving;
};
static pthread_mutex_t dir_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t dir_cv = PTHREAD_COND_INITIALIZER; /* one for all: waiters check their ticket */
static struct dir dirs[NDIRS];                           /* guarded by dir_mu; never removed */

static void init(void)
{
	real_open = (open_fn)dlsym(RTLD_NEXT, "open");
	real_open64 = (open_fn)dlsym(RTLD_NEXT, "open64");
	real_openat = (openat_fn)dlsym(RTLD_NEXT, "openat");
	real_openat64 = (openat_fn)dlsym(RTLD_NEXT, "openat64");
	const char *p = getenv("RSA_CONTENTION_CONF");
	if (!p || strlen(p) >= sizeof conf_path)
		return;
	strcpy(conf_path, p);
	snprintf(stats_path, sizeof stats_path, "%s.stats", p);
	snprintf(tmp_path, sizeof tmp_path, "%s.stats.tmp", p);
	snprintf(lock_path, sizeof lock_path, "%s.stats.lock", p);
}

/* slurp reads a small file whole, with the real open: never our own. */
static ssize_t slurp(const char *path, char *buf, size_t size)
{
	int fd = real_open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, size - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return n;
}

/* lookup returns key's value in "key=value" lines, or NULL. */
static const char *lookup(const char *text, const char *key)
{
	size_t kl = strlen(key);
	for (const char *p = text; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, kl) && p[kl] == '=')
			return p + kl + 1;
	return NULL;
}
static long long num(const char *text, const char *key)
{
	const char *v = lookup(text, key);
	return v ? strtoll(v, NULL, 10) : 0;
}

/*
 * add_stats adds a create of n in flight (n > 0) or an overflow (n == 0) to
 * the stats file; n < 0 only makes sure the file is of this generation. The
 * file is the sum: read it, add, write a tmp, rename, under an flock that
 * orders other processes (stats_mu orders this one's threads).
 */
static void add_stats(long long generation, int n, long long delay_us)
{
	char buf[4096], key[32];
	struct stats s = {0};
	pthread_mutex_lock(&stats_mu);
	int lk = real_open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (lk < 0 || flock(lk, LOCK_EX) != 0)
		goto out;
	if (slurp(stats_path, buf, sizeof buf) > 0) {
		s = (struct stats){num(buf, "generation"), num(buf, "creates"), num(buf, "delay_us"), num(buf, "overflow"), {0}};
		for (int i = 1; i <= MAXN; i++) {
			snprintf(key, sizeof key, "inflight_%d", i);
			s.inflight[i] = num(buf, key);
		}
	}
	if (s.generation == generation && n < 0)
		goto out; /* already this generation's */
	if (s.generation != generation)
		s = (struct stats){.generation = generation};
	if (n == 0)
		s.overflow++;
	if (n > 0) {
		s.creates++;
		s.delay_us += delay_us;
		s.inflight[n > MAXN ? MAXN : n]++;
	}
	int len = snprintf(buf, sizeof buf, "generation=%lld\ncreates=%lld\ndelay_us=%lld\noverflow=%lld\n",
			   s.generation, s.creates, s.delay_us, s.overflow);
	for (int i = 1; i <= MAXN; i++) /* at most 64 lines of < 40 bytes: buf is big enough */
		if (s.inflight[i])
			len += snprintf(buf + len, sizeof buf - len, "inflight_%d=%lld\n", i, s.inflight[i]);
	int fd = real_open(tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		int ok = write(fd, buf, len) == len;
		if (close(fd) == 0 && ok)
			rename(tmp_path, stats_path);
	}
out:
	if (lk >= 0)
		close(lk); /* and the flock goes with it */
	pthread_mutex_unlock(&stats_mu);
}

/* load_conf re-reads the configuration if its file changed, into *out. */
static void load_conf(struct conf *out)
{
	struct stat st;
	int fresh = 0;
	pthread_mutex_lock(&conf_mu);
	if (stat(conf_path, &st) != 0) {
		conf.enabled = 0;
		memset(&conf_st, 0, sizeof conf_st); /* read it again when it is back */
	} else if (st.st_ino != conf_st.st_ino || st.st_dev != conf_st.st_dev || st.st_size != conf_st.st_size ||
		   st.st_mtim.tv_sec != conf_st.st_mtim.tv_sec || st.st_mtim.tv_nsec != conf_st.st_mtim.tv_nsec) {
		char buf[8192], canon[PATH_MAX];
		const char *root;
		struct conf c = {0};
		conf_st = st;
		if (slurp(conf_path, buf, sizeof buf) >= 0 && (root = lookup(buf, "root")) && root[0] == '/') {
			snprintf(c.root, sizeof c.root, "%.*s", (int)strcspn(root, "\n"), root);
			if (realpath(c.root, canon)) /* canonical, as target's parent is */
				strcpy(c.root, canon);
			c.local_us = num(buf, "local_us");
			c.revoke_us = num(buf, "revoke_us");
			c.generation = num(buf, "generation");
		}
		c.enabled = c.root[0] == '/' && c.local_us >= 0 && c.revoke_us >= 0;
		fresh = c.enabled && (!conf.enabled || c.generation != conf.generation);
		conf = c;
	}
	*out = conf;
	pthread_mutex_unlock(&conf_mu);
	if (fresh)
		add_stats(out->generation, -1, 0); /* a new generation zeroes the counters */
}

/*
 * target says whether open(dirfd, path) would create a file under root:
 * 1 with the parent directory's stat in *pst, 0 if not (outside root, under
 * .glusterfs, no parent, the file already there).
 */
static int target(int dirfd, const char *path, const char *root, struct stat *pst)
{
	char abs[PATH_MAX * 2], dir[PATH_MAX] = "", parent[PATH_MAX], *base;
	struct stat st;
	ssize_t n;
	if (path[0] != '/' && dirfd == AT_FDCWD && !getcwd(dir, sizeof dir))
		return 0;
	if (path[0] != '/' && dirfd != AT_FDCWD) { /* the directory an fd names: its /proc link */
		snprintf(parent, sizeof parent, "/proc/self/fd/%d", dirfd);
		if ((n = readlink(parent, dir, sizeof dir - 1)) < 0)
			return 0;
		dir[n] = 0;
	}
	snprintf(abs, sizeof abs, "%s%s%s", dir, path[0] == '/' ? "" : "/", path);
	base = strrchr(abs, '/');
	*base++ = 0;
	/* realpath resolves symlinks and "..", so the root check is sound */
	if (!base[0] || strlen(base) > NAME_MAX || !realpath(abs[0] ? abs : "/", parent))
		return 0;
	size_t rl = strlen(root), pl = strlen(parent);
	if (strcmp(root, "/") != 0 && (strncmp(parent, root, rl) != 0 || (parent[rl] != '/' && parent[rl] != 0)))
		return 0;
	if (strstr(parent, "/.glusterfs/") || (pl >= 11 && !strcmp(parent + pl - 11, "/.glusterfs")) ||
	    !strcmp(base, ".glusterfs"))
		return 0;
	int fd = real_open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	int absent = fstat(fd, pst) == 0 && fstatat(fd, base, &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT;
	close(fd);
	return absent;
}

/* create is open or openat (o or oa, the real one asked for), under the model. */
static int create(open_fn o, openat_fn oa, int dirfd, const char *path, int flags, mode_t mode)
{
#define REAL() (o ? o(path, flags, mode) : oa(dirfd, path, flags, mode))
	struct conf c;
	struct stat pst;
	struct dir *d = NULL;
	int saved = errno, fd;
	if (!(flags & O_CREAT) || !conf_path[0])
		return REAL();
	load_conf(&c);
	if (!c.enabled || !target(dirfd, path, c.root, &pst)) {
		errno = saved;
		return REAL();
	}
	pthread_mutex_lock(&dir_mu);
	size_t h = ((size_t)pst.st_dev * 31 + (size_t)pst.st_ino) % NDIRS;
	for (size_t i = 0; i < NDIRS && !d; i++) { /* open addressing */
		struct dir *e = &dirs[(h + i) % NDIRS];
		if (!e->used)
			*e = (struct dir){.used = 1, .dev = pst.st_dev, .ino = pst.st_ino};
		if (e->dev == pst.st_dev && e->ino == pst.st_ino)
			d = e;
	}
	if (!d) {
		pthread_mutex_unlock(&dir_mu);
		add_stats(c.generation, 0, 0);
		errno = saved;
		return REAL();
	}
	unsigned long ticket = d->next++;
	long long n = (long long)(ticket - d->serving) + 1; /* ahead of it, and itself */
	while (d->serving != ticket)
		pthread_cond_wait(&dir_cv, &dir_mu);
	pthread_mutex_unlock(&dir_mu);

	long long us = c.local_us + c.revoke_us * (n - 1) / n;
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_sec += us / 1000000 + (t.tv_nsec + us % 1000000 * 1000) / 1000000000;
	t.tv_nsec = (t.tv_nsec + us % 1000000 * 1000) % 1000000000;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR)
		;
	errno = saved;
	fd = REAL();
	saved = errno;

	pthread_mutex_lock(&dir_mu);
	d->serving++;
	pthread_cond_broadcast(&dir_cv);
	pthread_mutex_unlock(&dir_mu);
	add_stats(c.generation, (int)(n > MAXN ? MAXN : n), us);
	errno = saved;
	return fd;
#undef REAL
}

/* The mode is an argument only when the flags need one (open(2)). */
#define MODE(flags)                                                             \
	mode_t mode = 0;                                                        \
	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) {            \
		va_list ap;                                                     \
		va_start(ap, flags);                                            \
		mode = (mode_t)va_arg(ap, int);                                 \
		va_end(ap);                                                     \
	}                                                                       \
	pthread_once(&once, init)

/* With _FILE_OFFSET_BITS unset, open and open64 are distinct symbols: both. */
int open(const char *path, int flags, ...) { MODE(flags); return create(real_open, NULL, AT_FDCWD, path, flags, mode); }
int open64(const char *path, int flags, ...) { MODE(flags); return create(real_open64, NULL, AT_FDCWD, path, flags, mode); }
int openat(int fd, const char *path, int flags, ...) { MODE(flags); return create(NULL, real_openat, fd, path, flags, mode); }
int openat64(int fd, const char *path, int flags, ...) { MODE(flags); return create(NULL, real_openat64, fd, path, flags, mode); }
