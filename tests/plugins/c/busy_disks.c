/*
 * busy-disks-c: a zpulse plugin in C that reads the sample, the example of
 * docs/plugin-authoring.md ("A C plugin that reads the sample").
 *
 * MessagePack is read and written with msgpack-c (Debian: libmsgpack-dev). Every sample it
 * walks the `disks` array (one map per disk, as `zpulse replay --format json` prints them),
 * counts the disks at or above `busy_pct` percent busy, and emits one metrics event naming the
 * busiest disk. Config: `[plugins.busy-disks-c] busy_pct = 90` (a number, 0-100; default 90).
 *
 * Build, from the checkout's top directory:
 *   cc -shared -fPIC -Wall -I proto/include -o libbusy_disks_c.so \
 *       tests/plugins/c/busy_disks.c $(pkg-config --cflags --libs msgpack)
 */
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zpulse_plugin.h"

struct state {
    const zpulse_host_api *host;
    double busy_pct;
};

static void fail(const zpulse_host_api *host, const char *why) {
    host->set_error(host->ctx, (const uint8_t *)why, strlen(why));
}

/* The value of `key` in the map `map`, or NULL when the map has no such key. */
static const msgpack_object *get(const msgpack_object *map, const char *key) {
    if (map->type != MSGPACK_OBJECT_MAP)
        return NULL;
    size_t n = strlen(key);
    for (uint32_t i = 0; i < map->via.map.size; i++) {
        const msgpack_object *k = &map->via.map.ptr[i].key;
        if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == n &&
            memcmp(k->via.str.ptr, key, n) == 0)
            return &map->via.map.ptr[i].val;
    }
    return NULL;
}

/* A number of any MessagePack kind (TOML and serde may send 90 as an integer). */
static int number(const msgpack_object *o, double *out) {
    if (o == NULL)
        return 0;
    switch (o->type) {
    case MSGPACK_OBJECT_POSITIVE_INTEGER: *out = (double)o->via.u64; return 1;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: *out = (double)o->via.i64; return 1;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64: *out = o->via.f64; return 1;
    default: return 0;
    }
}

/* Decodes the config; 0 and the reason in *why when it is not one this plugin accepts. */
static int parse_config(const uint8_t *config, size_t len, double *busy_pct, const char **why) {
    msgpack_unpacked msg;
    msgpack_unpacked_init(&msg);
    int ok = 0;
    *busy_pct = 90.0;
    if (msgpack_unpack_next(&msg, (const char *)config, len, NULL) != MSGPACK_UNPACK_SUCCESS ||
        msg.data.type != MSGPACK_OBJECT_MAP) {
        *why = "the config is not a MessagePack map";
        goto out;
    }
    for (uint32_t i = 0; i < msg.data.via.map.size; i++) {
        const msgpack_object *k = &msg.data.via.map.ptr[i].key;
        if (k->type != MSGPACK_OBJECT_STR || k->via.str.size != 8 ||
            memcmp(k->via.str.ptr, "busy_pct", 8) != 0) {
            *why = "unknown key: the only setting is busy_pct";
            goto out;
        }
    }
    const msgpack_object *pct = get(&msg.data, "busy_pct");
    if (pct != NULL && !(number(pct, busy_pct) && *busy_pct >= 0 && *busy_pct <= 100)) {
        *why = "busy_pct must be a number from 0 to 100";
        goto out;
    }
    ok = 1;
out:
    msgpack_unpacked_destroy(&msg);
    return ok;
}

static int32_t check_config(const zpulse_host_api *host, const uint8_t *config, size_t len) {
    double pct;
    const char *why;
    if (!parse_config(config, len, &pct, &why)) {
        fail(host, why);
        return ZPULSE_STATUS_CONFIG;
    }
    return ZPULSE_STATUS_OK;
}

static int32_t create(const zpulse_host_api *host, const uint8_t *config, size_t len,
                      void **out_state) {
    double pct;
    const char *why;
    if (!parse_config(config, len, &pct, &why)) {
        fail(host, why);
        return ZPULSE_STATUS_CONFIG;
    }
    struct state *s = calloc(1, sizeof *s);
    if (s == NULL) {
        fail(host, "out of memory");
        return ZPULSE_STATUS_ERROR;
    }
    s->host = host;
    s->busy_pct = pct;
    *out_state = s;
    return ZPULSE_STATUS_OK;
}

static void pack_str(msgpack_packer *pk, const char *s, size_t n) {
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s, n);
}

#define PACK_LIT(pk, lit) pack_str((pk), (lit), sizeof(lit) - 1)

static int32_t on_sample(void *state, const uint8_t *sample, size_t len) {
    struct state *s = state;
    msgpack_unpacked msg;
    msgpack_unpacked_init(&msg);
    int32_t status = ZPULSE_STATUS_ERROR;
    if (msgpack_unpack_next(&msg, (const char *)sample, len, NULL) != MSGPACK_UNPACK_SUCCESS) {
        fail(s->host, "the sample is not MessagePack");
        goto out;
    }
    /* `disks` is absent or empty on a host without block devices: that is no error. */
    const msgpack_object *disks = get(&msg.data, "disks");
    uint32_t count = 0, busy = 0;
    const msgpack_object *busiest = NULL;
    double busiest_util = -1;
    if (disks != NULL && disks->type == MSGPACK_OBJECT_ARRAY) {
        for (uint32_t i = 0; i < disks->via.array.size; i++) {
            const msgpack_object *disk = &disks->via.array.ptr[i];
            const msgpack_object *name = get(disk, "name");
            double util;
            if (name == NULL || name->type != MSGPACK_OBJECT_STR || !number(get(disk, "util"), &util))
                continue;
            count++;
            if (util >= s->busy_pct)
                busy++;
            if (util > busiest_util) {
                busiest_util = util;
                busiest = name;
            }
        }
    }
    if (busiest == NULL) {
        status = ZPULSE_STATUS_OK; /* nothing to say */
        goto out;
    }

    char summary[256];
    snprintf(summary, sizeof summary, "%u of %u disks at or above %g%% busy; the busiest, %.*s, at %.1f%%",
             busy, count, s->busy_pct, (int)busiest->via.str.size, busiest->via.str.ptr, busiest_util);
    msgpack_sbuffer buf;
    msgpack_sbuffer_init(&buf);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &buf, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 7);
    PACK_LIT(&pk, "v");
    msgpack_pack_uint8(&pk, 1);
    PACK_LIT(&pk, "kind");
    PACK_LIT(&pk, "metrics");
    PACK_LIT(&pk, "check");
    PACK_LIT(&pk, "busy-disks-c");
    PACK_LIT(&pk, "severity");
    PACK_LIT(&pk, "info");
    PACK_LIT(&pk, "subject");
    PACK_LIT(&pk, "disks");
    PACK_LIT(&pk, "summary");
    pack_str(&pk, summary, strlen(summary));
    PACK_LIT(&pk, "data");
    msgpack_pack_map(&pk, 4);
    PACK_LIT(&pk, "disks");
    msgpack_pack_uint32(&pk, count);
    PACK_LIT(&pk, "busy");
    msgpack_pack_uint32(&pk, busy);
    PACK_LIT(&pk, "busiest");
    pack_str(&pk, busiest->via.str.ptr, busiest->via.str.size);
    PACK_LIT(&pk, "busiest_util_pct");
    msgpack_pack_double(&pk, busiest_util);
    if (s->host->emit(s->host->ctx, (const uint8_t *)buf.data, buf.size) == ZPULSE_EMIT_OK)
        status = ZPULSE_STATUS_OK;
    else
        fail(s->host, "the agent refused the event");
    msgpack_sbuffer_destroy(&buf);
out:
    msgpack_unpacked_destroy(&msg);
    return status;
}

static void destroy(void *state) { free(state); }

/* A forged ABI 1.4 fingerprint: no C struct is the agent's Rust `Sample`, so the agent must
 * keep sending MessagePack; a native call would fail the sample, which the test would see. */
static uint64_t forged_layout(void) { return 0x7a70756c73650001ULL; }

static int32_t native_refused(void *state, const void *sample) {
    (void)state;
    (void)sample;
    return ZPULSE_STATUS_ERROR;
}

static const zpulse_plugin_descriptor descriptor = {
    .abi_major = ZPULSE_ABI_MAJOR,
    .abi_minor = ZPULSE_ABI_MINOR,
    .struct_size = sizeof(zpulse_plugin_descriptor),
    .name = {"busy-disks-c", 12},
    .version = {"1.0.0", 5},
    .build_info = {"busy_disks.c, msgpack-c", 23},
    .create = create,
    .on_sample = on_sample,
    .destroy = destroy,
    .check_config = check_config,
    /* It reads only `disks`: the agent may leave every other optional part out. */
    .unread = ZPULSE_PART_SNAPSHOT_DISKS | ZPULSE_PART_TXGS | ZPULSE_PART_VDEV_HISTOGRAMS |
              ZPULSE_PART_VDEV_RAW_STATS | ZPULSE_PART_DATASETS | ZPULSE_PART_HOST_RATES,
    .sample_layout = forged_layout,
    .on_sample_native = native_refused,
};

const zpulse_plugin_descriptor *zpulse_plugin_entry(void) { return &descriptor; }
