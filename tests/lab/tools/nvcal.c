/* nvcal REPLY ITERATIONS: what libnvpair's work on a ZFS_IOC_POOL_STATS reply costs, to
 * compare the same work on this machine and in the lab VM (software emulation slows it by a
 * factor this measures). The reply is unpacked once; then, per iteration, unpacked and freed
 * again (what libzfs does with a reply), duplicated (every pair allocated and copied, as the
 * kernel builds a pool's config with its statistics: spa_config_generate), packed native and
 * freed (as the ioctl's reply is packed: put_nvlist). Prints CPU µs per iteration of each.
 * libnvpair is loaded at run time (Debian's libnvpair3linux, which the lab VM has), so that
 * building this needs no ZFS headers or libraries: gcc -O2 -o nvcal nvcal.c -ldl */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct nvlist nvlist_t;
static int (*unpack)(char *, size_t, nvlist_t **, int);
static int (*duplicate)(const nvlist_t *, nvlist_t **, int);
static int (*pack)(nvlist_t *, char **, size_t *, int, int);
static void (*nvfree)(nvlist_t *);

static double cpu_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char **argv) {
  /* libnvpair first: without arguments, the usage line says it loads. */
  void *lib = dlopen("libnvpair.so.3", RTLD_NOW);
  if (!lib) {
    fprintf(stderr, "nvcal: %s\n", dlerror());
    return 1;
  }
  if (argc != 3) {
    fprintf(stderr, "usage: nvcal REPLY ITERATIONS\n");
    return 2;
  }
  unpack = dlsym(lib, "nvlist_unpack");
  duplicate = dlsym(lib, "nvlist_dup");
  pack = dlsym(lib, "nvlist_pack");
  nvfree = dlsym(lib, "nvlist_free");
  if (!unpack || !duplicate || !pack || !nvfree) {
    fprintf(stderr, "nvcal: libnvpair lacks a function\n");
    return 1;
  }
  /* Non-blocking, and a regular file only: a FIFO or a device in the reply's place is
   * refused at once instead of waiting for a writer that never comes. */
  int fd = open(argv[1], O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    perror(argv[1]);
    return 1;
  }
  if (!S_ISREG(st.st_mode)) {
    fprintf(stderr, "nvcal: %s: not a regular file\n", argv[1]);
    return 1;
  }
  long n = st.st_size;
  char *bytes = malloc(n > 0 ? n : 1);
  long got = 0;
  while (bytes && got < n) {
    ssize_t r = read(fd, bytes + got, n - got);
    if (r <= 0)
      break;
    got += r;
  }
  close(fd);
  if (!bytes || got != n) {
    fprintf(stderr, "nvcal: %s: short read\n", argv[1]);
    return 1;
  }
  int iterations = atoi(argv[2]);
  nvlist_t *tree;
  if (iterations < 1 || unpack(bytes, n, &tree, 0) != 0) {
    fprintf(stderr, "nvcal: %s: not a packed nvlist (or no iterations)\n", argv[1]);
    return 1;
  }
  double unpacked = 0, built = 0, packed = 0;
  for (int i = 0; i < iterations; i++) {
    nvlist_t *again, *copy;
    char *out = NULL;
    size_t len = 0;
    double t0 = cpu_us();
    if (unpack(bytes, n, &again, 0) == 0)
      nvfree(again);
    double t1 = cpu_us();
    if (duplicate(tree, &copy, 0) != 0)
      return 1;
    double t2 = cpu_us();
    if (pack(copy, &out, &len, 0 /* NV_ENCODE_NATIVE */, 0) != 0)
      return 1;
    free(out);
    nvfree(copy);
    double t3 = cpu_us();
    unpacked += t1 - t0;
    built += t2 - t1;
    packed += t3 - t2;
  }
  printf("%s: %ld bytes, %d iterations; CPU µs each: unpack+free %.0f, dup %.0f, "
         "pack+free %.0f\n",
         argv[1], n, iterations, unpacked / iterations, built / iterations,
         packed / iterations);
  return 0;
}
