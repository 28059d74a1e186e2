/*
 * zpulse_plugin.h — the zpulse plugin ABI, version 1.6, for plugins written in C.
 *
 * The same contract as zpulse-proto's `abi` module (Rust plugins use its SDK instead).
 *
 * A plugin is a shared object that exports one function:
 *
 *     const zpulse_plugin_descriptor *zpulse_plugin_entry(void);
 *
 * returning a pointer to a static descriptor. The agent opens the object with
 * RTLD_NOW | RTLD_LOCAL, reads the descriptor's version first, refuses another major version
 * (naming both), and never unloads the object.
 *
 * Since ABI 1.5 one object may hold several plugins (a bundle) and export instead
 *
 *     const zpulse_plugin_descriptor *zpulse_plugin_bundle(size_t index);
 *
 * returning the descriptor of plugin `index` (0, 1, ...) and NULL for the first index past
 * the last. Each is a plugin of its own (name, table, state); they share the file, the code
 * in it and one thread of the agent, which calls them one after another (one wake-up a
 * sample for all of them). At most ZPULSE_BUNDLE_MAX; an object exporting both symbols is
 * refused.
 *
 * Rules
 *  - Payloads are MessagePack, maps with string keys:
 *      config  the plugin's [plugins.<name>] table from zpulse.toml (an empty map if none);
 *      sample  one zpulse sample (zpulse-proto's `Sample`: start, end, interval, arc, zil,
 *              pools, disks, cpu, net, resets, snapshot). Figures a kernel does not provide
 *              are absent, not zero. Ignore keys you do not know.
 *      event   one record: v (1), kind ("finding" | "metrics"), check, severity ("info" |
 *              "warning" | "critical"), state ("raised" | "updated" | "cleared"; findings
 *              only), subject, summary, advice (optional), data (a map of figures). The agent
 *              fills in host and time. Unknown keys are refused.
 *      window  (ABI 1.2, `report`) zpulse-proto's `ReportWindow`: from, to, intervals, whole
 *              (the window as one sample: its mean rates, all its I/O's histograms, the last
 *              snapshot), busy (per disk: name, util = %util of every interval).
 *      zevent  (ABI 1.6, `on_event`) one kernel event (zpulse-proto's `ZEvent`): eid, class
 *              ("ereport.fs.zfs.checksum", "resource.fs.zfs.statechange",
 *              "sysevent.fs.zfs.resilver_finish", ...), time, before_start, pool, pool_guid,
 *              vdev (guid, kind, path, devid, state, previous_state, error counts, parent_*),
 *              zio (err, offset, size, objset, object, level, blkid, delay_ns, ...), checksum,
 *              history, resilver_type, raw (every other pair by its kernel name). Absent
 *              fields are nil or missing. At most ZPULSE_ZEVENT_MAX_BYTES.
 *      section (ABI 1.2, host->section) one conclusion: rating ("ok" | "info" | "warning" |
 *              "critical"), title, summary, advice (optional), subject (optional), figures
 *              (an array of maps: key, label, value, unit), verdict (optional, up to 64
 *              bytes: the verdict in stable words, e.g. "seek-bound", compared across the
 *              window's intervals to find phases; hosts before it ignore it). At most 16 KiB
 *              and 32 figures; at most 32 sections per report. report may be called more
 *              than once per window: over each interval and over stretches of intervals too.
 *  - Nobody frees memory the other side allocated. Pointers passed to a function are valid
 *    during that call only; copy what you keep. The host copies whatever you pass to its
 *    callbacks before they return. The descriptor and its strings must be static.
 *  - create, on_sample and destroy of one state are never called concurrently. The agent
 *    runs the plugins of one file on one thread of their own; when one of them hangs, the
 *    others go on on a new thread, so do not tie a state to the thread that created it.
 *    Host callbacks are thread-safe; the host API and its ctx stay valid for the life of
 *    the process.
 *  - A failing call returns a non-zero status and may first call host->set_error with the
 *    reason. ZPULSE_STATUS_CONFIG from create refuses the plugin (its config is invalid);
 *    failures of on_sample are counted, and a plugin that keeps failing is disabled.
 *  - on_sample has a time budget (2 s by default): a call that overruns it marks the plugin
 *    hung, and it gets no samples until the call returns.
 *  - Do not install signal handlers, call exit(), or leave threads running.
 *
 * Layouts below are for LP64 (64-bit Linux and FreeBSD); the asserts at the end check them.
 */
#ifndef ZPULSE_PLUGIN_H
#define ZPULSE_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ZPULSE_ABI_MAJOR 1
#define ZPULSE_ABI_MINOR 6
#define ZPULSE_ENTRY_SYMBOL "zpulse_plugin_entry"
#define ZPULSE_BUNDLE_SYMBOL "zpulse_plugin_bundle"
#define ZPULSE_BUNDLE_MAX 64
#define ZPULSE_ZEVENT_MAX_BYTES (64 * 1024) /* ABI 1.6: the largest `zevent` on_event gets */

/* Descriptor flags (ABI 1.1). The agent refuses a plugin that sets this one: its code aborts
 * the process on an internal error instead of returning ZPULSE_STATUS_PANIC. */
#define ZPULSE_DESCRIPTOR_PANIC_ABORT 1u

/* Status of create and on_sample. */
#define ZPULSE_STATUS_OK 0
#define ZPULSE_STATUS_ERROR 1  /* failed; reason given to set_error */
#define ZPULSE_STATUS_CONFIG 2 /* create only: invalid config; the plugin is refused */
#define ZPULSE_STATUS_PANIC 3  /* an internal bug (a Rust panic caught by the SDK) */

/* Status of host->emit. The limits an event record is held to (zpulse_proto::event::limits
 * and the agent's [plugins] settings):
 *   - check: 1-64 characters of A-Z a-z 0-9 . _ -; subject at most 256 characters and
 *     summary 1024, one line each; advice 2048 (newlines and tabs allowed); no other control
 *     characters; data at most 256 keys and values (nested ones
 *     included), keys at most 64 characters, nested at most 4 deep, no NaN or infinity:
 *     else ZPULSE_EMIT_INVALID;
 *   - the record's MessagePack at most max_event_bytes (65536 by default):
 *     else ZPULSE_EMIT_TOO_LARGE;
 *   - at most max_events_per_sample (1000 by default) records per call:
 *     else ZPULSE_EMIT_RATE_LIMITED.
 * A refused record is dropped and the agent reports it once, as an agent event. */
#define ZPULSE_EMIT_OK 0
#define ZPULSE_EMIT_INVALID 1      /* not a valid event record (the field limits above) */
#define ZPULSE_EMIT_TOO_LARGE 2    /* over max_event_bytes (64 KiB by default) */
#define ZPULSE_EMIT_RATE_LIMITED 3 /* over max_events_per_sample (1000 by default); dropped */

/* Parts of the sample a plugin may say it does not read (descriptor field `unread`, ABI 1.1):
 * the agent may leave them out of the samples it sends it (an empty list or no key, as when
 * the kernel does not report them). Everything no bit names is always sent. */
#define ZPULSE_PART_SNAPSHOT_DISKS (1ULL << 0)   /* snapshot.disks */
#define ZPULSE_PART_TXGS (1ULL << 1)             /* snapshot.pools[].txgs */
#define ZPULSE_PART_VDEV_HISTOGRAMS (1ULL << 2)  /* histograms of snapshot.pools[].config vdevs */
#define ZPULSE_PART_VDEV_RAW_STATS (1ULL << 3)   /* stats.raw of those vdevs (an empty list) */
#define ZPULSE_PART_DISK_RATES (1ULL << 4)       /* disks */
#define ZPULSE_PART_DATASETS (1ULL << 5)         /* snapshot.pools[].datasets */
#define ZPULSE_PART_HOST_RATES (1ULL << 6)       /* net, cpu, snapshot.net, snapshot.cpu */
/* ABI 1.3 */
#define ZPULSE_PART_ARC (1ULL << 7)              /* arc, snapshot.arc */
#define ZPULSE_PART_POOL_CONFIGS (1ULL << 8)     /* config of snapshot.pools[] (vdev trees) */
#define ZPULSE_PART_POOL_RATES (1ULL << 9)       /* pools (per-pool and per-vdev rates) */

/* Levels of host->log. */
#define ZPULSE_LOG_ERROR 1
#define ZPULSE_LOG_WARN 2
#define ZPULSE_LOG_INFO 3
#define ZPULSE_LOG_DEBUG 4

/* A UTF-8 string, not NUL-terminated. */
typedef struct zpulse_str {
    const char *ptr;
    size_t len;
} zpulse_str;

/* What the agent passes to create. */
typedef struct zpulse_host_api {
    uint32_t abi_major;   /* ZPULSE_ABI_MAJOR */
    uint32_t abi_minor;
    uint32_t struct_size; /* sizeof the agent's struct: fields past it are absent */
    uint32_t reserved;
    void *ctx;            /* pass it back to every callback */
    void (*log)(void *ctx, int32_t level, const uint8_t *msg, size_t len);
    int32_t (*emit)(void *ctx, const uint8_t *event, size_t len);
    void (*set_error)(void *ctx, const uint8_t *msg, size_t len);
    /* ABI 1.2 (present when struct_size >= 56): one report section, during report only;
     * returns a ZPULSE_EMIT_* status. */
    int32_t (*section)(void *ctx, const uint8_t *section, size_t len);
} zpulse_host_api;

/* What the plugin exports. The first four fields are the same in every ABI version. */
typedef struct zpulse_plugin_descriptor {
    uint32_t abi_major;   /* ZPULSE_ABI_MAJOR */
    uint32_t abi_minor;   /* ZPULSE_ABI_MINOR */
    uint32_t struct_size; /* sizeof(zpulse_plugin_descriptor) */
    uint32_t flags;       /* ZPULSE_DESCRIPTOR_* bits (ABI 1.1), normally 0 */
    zpulse_str name;      /* [A-Za-z0-9_-]{1,64}: the config table [plugins.<name>] */
    zpulse_str version;   /* the plugin's version, up to 64 bytes */
    zpulse_str build_info; /* free text for diagnostics */
    /* Build the state from the config; store it in *out_state (NULL is allowed). */
    int32_t (*create)(const zpulse_host_api *host, const uint8_t *config, size_t config_len,
                      void **out_state);
    /* Look at one sample; emit events through the host saved in create. */
    int32_t (*on_sample)(void *state, const uint8_t *sample, size_t sample_len);
    /* Free the state. */
    void (*destroy)(void *state);
    /* ABI 1.1, may be NULL: whether create would accept this config, without building any
     * state; ZPULSE_STATUS_OK, or ZPULSE_STATUS_CONFIG with the reason given to set_error.
     * Run the whole validation create runs (types, ranges, relations between keys): the
     * agent calls it for `zpulse check-config`, before a reload, on a thread of its own,
     * and must be able to drop the result. No threads, no files, no state. A reason that
     * starts with the key ("clear_pct: must be at most busy_pct") is shown at that key's
     * line of the config file; several reasons, one a line. */
    int32_t (*check_config)(const zpulse_host_api *host, const uint8_t *config,
                            size_t config_len);
    /* ABI 1.1: ZPULSE_PART_* bits this plugin does not read; 0 = send the whole sample. A
     * 1.0 descriptor (88 bytes, without check_config nor this field) is still accepted and
     * gets everything. */
    uint64_t unread;
    /* ABI 1.2, may be NULL: `zpulse report` calls it once, after the window's samples went
     * through on_sample, with one window (see above); answer with host->section (zero or
     * more times). Same thread and time budget as on_sample. */
    int32_t (*report)(void *state, const uint8_t *window, size_t window_len);
    /* ABI 1.4, NULL in C: Rust plugins built from the agent's own zpulse-proto sources by the
     * same compiler may be handed the agent's in-memory sample instead of MessagePack (a
     * layout fingerprint, and on_sample over a pointer to it). A C plugin always gets the
     * MessagePack sample through on_sample. */
    uint64_t (*sample_layout)(void);
    int32_t (*on_sample_native)(void *state, const void *sample);
    /* ABI 1.6, may be NULL (the plugin takes no kernel events): one kernel event (see
     * `zevent` above) as soon as the agent reads it, between samples, on the plugin's thread
     * and within its budget; events emitted from it carry the kernel event's time. */
    int32_t (*on_event)(void *state, const uint8_t *zevent, size_t zevent_len);
} zpulse_plugin_descriptor;

/* The symbol a plugin exports: one of these two. */
const zpulse_plugin_descriptor *zpulse_plugin_entry(void);
const zpulse_plugin_descriptor *zpulse_plugin_bundle(size_t index); /* ABI 1.5 */

#if defined(__LP64__) && !defined(__cplusplus)
_Static_assert(sizeof(zpulse_str) == 16, "zpulse_str layout");
_Static_assert(offsetof(zpulse_plugin_descriptor, name) == 16, "descriptor layout");
_Static_assert(offsetof(zpulse_plugin_descriptor, create) == 64, "descriptor layout");
_Static_assert(offsetof(zpulse_plugin_descriptor, check_config) == 88, "descriptor layout");
_Static_assert(offsetof(zpulse_plugin_descriptor, unread) == 96, "descriptor layout");
_Static_assert(offsetof(zpulse_plugin_descriptor, report) == 104, "descriptor layout");
_Static_assert(offsetof(zpulse_plugin_descriptor, sample_layout) == 112, "descriptor layout");
_Static_assert(offsetof(zpulse_plugin_descriptor, on_sample_native) == 120, "descriptor layout");
_Static_assert(offsetof(zpulse_plugin_descriptor, on_event) == 128, "descriptor layout");
_Static_assert(sizeof(zpulse_plugin_descriptor) == 136, "descriptor layout");
_Static_assert(offsetof(zpulse_host_api, ctx) == 16, "host api layout");
_Static_assert(offsetof(zpulse_host_api, section) == 48, "host api layout");
_Static_assert(sizeof(zpulse_host_api) == 56, "host api layout");
#endif

#ifdef __cplusplus
}
#endif

#endif /* ZPULSE_PLUGIN_H */
