/*
 * hello-c: a zpulse plugin in plain C, proof that the ABI is language-neutral.
 *
 * On every sample it emits one metrics event whose data holds the size of the sample it got
 * and the number of samples seen; asked for a report (ABI 1.2), it gives one section with
 * those figures. MessagePack is written by hand: a real C plugin would use
 * a library such as msgpack-c or mpack.
 *
 * Build: cc -shared -fPIC -I proto/include -o libhello_c.so tests/plugins/c/hello.c
 * With -DHELLO_ABI_MAJOR=2 it claims another ABI major, which the agent must refuse; with
 * -DHELLO_FLAGS=ZPULSE_DESCRIPTOR_PANIC_ABORT it says it aborts on panic, refused as well;
 * with -DHELLO_LAYOUT_HANG its ABI 1.4 sample_layout never returns, which must cost only it.
 * ABI 1.5 bundles: with -DHELLO_BUNDLE it exports zpulse_plugin_bundle instead of the entry,
 * holding hello-c, hello-c-twin (the same code under another name) and one descriptor whose
 * name is not a valid name, which must cost only that one; with -DHELLO_BUNDLE_ENDLESS the
 * bundle never answers NULL; with -DHELLO_BOTH it exports the entry and the bundle. With
 * -DHELLO_BUNDLE_FIRST_WAITS_IN='"DIR"' as well, the bundle's first plugin (hello-c) creates
 * DIR/entered in its first on_sample and returns only once DIR/release exists, with
 * hello-c-twin queued behind it on the bundle's thread: a call in hand for as long as the
 * test wants, not for a fixed time. With
 * -DHELLO_IGNORES_SIGNALS it sets SIGTERM, SIGINT and SIGHUP to SIG_IGN when loaded (a
 * constructor), in create and in every on_sample, which must not keep the agent from
 * stopping on SIGTERM.
 */
#if defined(HELLO_LAYOUT_HANG) || defined(HELLO_BUNDLE_FIRST_WAITS_IN)
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#endif
#include <stdlib.h>
#include <string.h>
#ifdef HELLO_IGNORES_SIGNALS
#include <signal.h>
static void ignore_signals(void) {
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
}
__attribute__((constructor)) static void ignore_signals_when_loaded(void) { ignore_signals(); }
#define HELLO_MISBEHAVE() ignore_signals()
#else
#define HELLO_MISBEHAVE() ((void)0)
#endif

#include "zpulse_plugin.h"

#ifndef HELLO_FLAGS
#define HELLO_FLAGS 0
#endif
#ifndef HELLO_ABI_MINOR
#define HELLO_ABI_MINOR ZPULSE_ABI_MINOR
#endif
#ifndef HELLO_ABI_MAJOR
#define HELLO_ABI_MAJOR ZPULSE_ABI_MAJOR
#endif

struct state {
    const zpulse_host_api *host;
    unsigned long samples;
};

struct buf {
    uint8_t data[512];
    size_t len;
};

static void put(struct buf *b, const void *p, size_t n) {
    if (b->len + n <= sizeof b->data) {
        memcpy(b->data + b->len, p, n);
        b->len += n;
    }
}

static void put_byte(struct buf *b, uint8_t x) { put(b, &x, 1); }

/* fixstr: strings shorter than 32 bytes. */
static void put_str(struct buf *b, const char *s) {
    size_t n = strlen(s);
    put_byte(b, (uint8_t)(0xa0 | n));
    put(b, s, n);
}

/* uint 64, big-endian. */
static void put_u64(struct buf *b, uint64_t v) {
    put_byte(b, 0xcf);
    for (int shift = 56; shift >= 0; shift -= 8)
        put_byte(b, (uint8_t)(v >> shift));
}

static void say(const zpulse_host_api *host, int32_t level, const char *msg) {
    host->log(host->ctx, level, (const uint8_t *)msg, strlen(msg));
}

static int32_t create(const zpulse_host_api *host, const uint8_t *config, size_t config_len,
                      void **out_state) {
    /* The config must be a map (0x80-0x8f fixmap, 0xde map16, 0xdf map32). */
    if (config_len == 0 || !((config[0] & 0xf0) == 0x80 || config[0] == 0xde || config[0] == 0xdf)) {
        const char *why = "the config is not a MessagePack map";
        host->set_error(host->ctx, (const uint8_t *)why, strlen(why));
        return ZPULSE_STATUS_CONFIG;
    }
    struct state *s = calloc(1, sizeof *s);
    if (s == NULL) {
        const char *why = "out of memory";
        host->set_error(host->ctx, (const uint8_t *)why, strlen(why));
        return ZPULSE_STATUS_ERROR;
    }
    s->host = host;
    *out_state = s;
    HELLO_MISBEHAVE();
    say(host, ZPULSE_LOG_INFO, "hello from C");
    return ZPULSE_STATUS_OK;
}

static int32_t on_sample(void *state, const uint8_t *sample, size_t sample_len) {
    struct state *s = state;
    (void)sample;
    HELLO_MISBEHAVE();
    s->samples++;
    struct buf b = {.len = 0};
    put_byte(&b, 0x87); /* a map of 7 pairs */
    put_str(&b, "v");
    put_byte(&b, 0x01);
    put_str(&b, "kind");
    put_str(&b, "metrics");
    put_str(&b, "check");
    put_str(&b, "hello-c");
    put_str(&b, "severity");
    put_str(&b, "info");
    put_str(&b, "subject");
    put_str(&b, "host");
    put_str(&b, "summary");
    put_str(&b, "hello from C");
    put_str(&b, "data");
    put_byte(&b, 0x82);
    put_str(&b, "sample_bytes");
    put_u64(&b, (uint64_t)sample_len);
    put_str(&b, "samples");
    put_u64(&b, (uint64_t)s->samples);
    if (s->host->emit(s->host->ctx, b.data, b.len) != ZPULSE_EMIT_OK) {
        const char *why = "the agent refused the event";
        s->host->set_error(s->host->ctx, (const uint8_t *)why, strlen(why));
        return ZPULSE_STATUS_ERROR;
    }
    return ZPULSE_STATUS_OK;
}

/* float 64, big-endian. */
static void put_f64(struct buf *b, double v) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    put_byte(b, 0xcb);
    for (int shift = 56; shift >= 0; shift -= 8)
        put_byte(b, (uint8_t)(bits >> shift));
}

/* ABI 1.2: one conclusion over the report window: how many samples it saw. It first offers a
 * section without a title, which the agent must refuse, and reports the status it got. */
static int32_t report(void *state, const uint8_t *window, size_t window_len) {
    struct state *s = state;
    (void)window;
    if (s->host->struct_size < 56 || s->host->section == NULL)
        return ZPULSE_STATUS_OK; /* an agent before 1.2: no reports */
    struct buf bad = {.len = 0};
    put_byte(&bad, 0x83);
    put_str(&bad, "rating");
    put_str(&bad, "ok");
    put_str(&bad, "title");
    put_str(&bad, "");
    put_str(&bad, "summary");
    put_str(&bad, "no title");
    int32_t refused = s->host->section(s->host->ctx, bad.data, bad.len);

    struct buf b = {.len = 0};
    put_byte(&b, 0x84); /* rating, title, summary, figures */
    put_str(&b, "rating");
    put_str(&b, "ok");
    put_str(&b, "title");
    put_str(&b, "hello from C");
    put_str(&b, "summary");
    put_str(&b, "counted the samples");
    put_str(&b, "figures");
    put_byte(&b, 0x93); /* three figures */
    const char *keys[3] = {"samples", "window_bytes", "refused_status"};
    double values[3] = {(double)s->samples, (double)window_len, (double)refused};
    for (int i = 0; i < 3; i++) {
        put_byte(&b, 0x84);
        put_str(&b, "key");
        put_str(&b, keys[i]);
        put_str(&b, "label");
        put_str(&b, keys[i]);
        put_str(&b, "value");
        put_f64(&b, values[i]);
        put_str(&b, "unit");
        put_str(&b, "");
    }
    if (s->host->section(s->host->ctx, b.data, b.len) != ZPULSE_EMIT_OK) {
        const char *why = "the agent refused the section";
        s->host->set_error(s->host->ctx, (const uint8_t *)why, strlen(why));
        return ZPULSE_STATUS_ERROR;
    }
    return ZPULSE_STATUS_OK;
}

static void destroy(void *state) { free(state); }

#ifdef HELLO_BUNDLE_FIRST_WAITS_IN
static int32_t on_sample_first_waits(void *state, const uint8_t *sample, size_t sample_len) {
    struct state *s = state;
    if (s->samples == 0) {
        FILE *entered = fopen(HELLO_BUNDLE_FIRST_WAITS_IN "/entered", "w");
        if (entered != NULL)
            fclose(entered);
        struct timespec poll = {0, 1000000L};
        while (access(HELLO_BUNDLE_FIRST_WAITS_IN "/release", F_OK) != 0)
            nanosleep(&poll, NULL);
    }
    return on_sample(state, sample, sample_len);
}
#define HELLO_FIRST_ON_SAMPLE on_sample_first_waits
#else
#define HELLO_FIRST_ON_SAMPLE on_sample
#endif

#ifdef HELLO_LAYOUT_HANG
/* Asked after create, on the plugin's thread: the agent must treat it as a create that hangs. */
static uint64_t layout_hangs(void) {
    for (;;)
        sleep(60);
    return 0;
}

static int32_t native_never(void *state, const void *sample) {
    (void)state;
    (void)sample;
    return ZPULSE_STATUS_ERROR;
}
#endif

/* One descriptor of this plugin's code under the name NAME (a string literal). */
#ifdef HELLO_LAYOUT_HANG
#define HELLO_NATIVE .sample_layout = layout_hangs, .on_sample_native = native_never,
#else
#define HELLO_NATIVE
#endif
#define HELLO_DESCRIPTOR_WITH(NAME, ON_SAMPLE)                                                 \
    {                                                                                          \
        .abi_major = HELLO_ABI_MAJOR,                                                          \
        .abi_minor = HELLO_ABI_MINOR,                                                          \
        .struct_size = sizeof(zpulse_plugin_descriptor),                                       \
        .flags = HELLO_FLAGS,                                                                  \
        .name = {NAME, sizeof(NAME) - 1},                                                      \
        .version = {"1.0.0", 5},                                                               \
        .build_info = {"hello.c", 7},                                                          \
        .create = create,                                                                      \
        .on_sample = ON_SAMPLE,                                                                \
        .destroy = destroy,                                                                    \
        /* ABI 1.1 fields left zero: no check_config (NULL), and unread 0: it is sent the     \
         * whole sample, as a 1.0 plugin is. */                                                \
        .report = report,                                                                      \
        HELLO_NATIVE                                                                           \
    }
#define HELLO_DESCRIPTOR(NAME) HELLO_DESCRIPTOR_WITH(NAME, on_sample)

#if defined(HELLO_BUNDLE) || defined(HELLO_BUNDLE_ENDLESS) || defined(HELLO_BOTH)
static const zpulse_plugin_descriptor bundle[] = {
    HELLO_DESCRIPTOR_WITH("hello-c", HELLO_FIRST_ON_SAMPLE),
    HELLO_DESCRIPTOR("hello-c-twin"),
    HELLO_DESCRIPTOR("not a name"),
};

const zpulse_plugin_descriptor *zpulse_plugin_bundle(size_t index) {
#ifdef HELLO_BUNDLE_ENDLESS
    return &bundle[index % 2];
#else
    return index < sizeof(bundle) / sizeof(bundle[0]) ? &bundle[index] : NULL;
#endif
}
#endif

#if !defined(HELLO_BUNDLE) && !defined(HELLO_BUNDLE_ENDLESS)
static const zpulse_plugin_descriptor descriptor = HELLO_DESCRIPTOR("hello-c");

const zpulse_plugin_descriptor *zpulse_plugin_entry(void) { return &descriptor; }
#endif
