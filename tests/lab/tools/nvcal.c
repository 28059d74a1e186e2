/* nvcal REPLY ITERATIONS: what libnvpair's work on a ZFS_IOC_POOL_STATS reply costs, to
 * compare the same work on this machine and in the lab VM (software emulation slows it by a
 * factor this measures). The reply is unpacked once; then, per iteration, unpacked and freed
 * again (what libzfs does with a reply), duplicated (every pair allocated and copied, as the
 * kernel builds a pool's config with its statistics: spa_config_generate), packed native and
 * freed (as the ioctl's reply is packed: put_nvlist). Prints CPU µs per iteration of each.
 * libnvpair is loaded at run time (Debian's libnvpair3linux, which the lab VM has), so that
 * building this needs no ZFS headers or libraries: gcc -O2 -o nvcal nvcal.c -ldl */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef struct nvlist nvlist_t;
static int (*unpack)(char *, size_t, nvlist_t **, int);
static int (*dup)(const nvlist_t *, nvlist_t **, int);
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
  dup = dlsym(lib, "nvlist_dup");
  pack = dlsym(lib, "nvlist_pack");
  nvfree = dlsym(lib, "nvlist_free");
  if (!unpack || !dup || !pack || !nvfree) {
    fprintf(stderr, "nvcal: libnvpair lacks a function\n");
    return 1;
  }
  FILE *f = fopen(argv[1], "rb");
  if (!f) {
    perror(argv[1]);
    return 1;
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *bytes = malloc(n);
  if (!bytes || fread(bytes, 1, n, f) != (size_t)n) {
    fprintf(stderr, "nvcal: %s: short read\n", argv[1]);
    return 1;
  }
  fclose(f);
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
    if (dup(tree, &copy, 0) != 0)
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
