/* The configuration file's machinery, shared by every binary that reads it:
 * a table of settings (YAML path, environment variable, type, default,
 * check) bound to the struct it fills. A binary passes only its own tables,
 * so it reads, checks and dumps only its own settings: hangar-relay's
 * loader has no row for the webhook's TLS settings, and never parses them.
 * One file may still hold every binary's settings: keys another reader owns
 * are named (conftable_t.foreign) and skipped unread. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "error.h"

typedef struct strlist {
        char **items;
        size_t n;
} strlist_t;

typedef enum conf_type {
        CONF_BOOL,
        CONF_U32,
        CONF_U64,
        CONF_STRING,
        CONF_STRLIST,
} conf_type_t;

typedef struct conf_setting {
        const char *path; /* dotted YAML path */
        const char *env;  /* environment override */
        conf_type_t type;
        size_t offset;                /* of the field in the table's struct */
        const char *default_value;    /* text, parsed like the environment's */
        uint64_t min, max;            /* numbers; list lengths */
        bool (*check)(const char *s); /* strings: NULL = any non-empty */
        const char *expected;         /* what a good value looks like, for messages */
} conf_setting_t;

/* One table and the struct it fills. */
typedef struct conf_part {
        const conf_setting_t *rows;
        size_t n;
        void *obj;
        size_t size; /* sizeof *obj */
} conf_part_t;

/* What one binary reads: its parts, in the order they are dumped, and the
 * top-level keys of the file that belong to other readers (NULL-terminated;
 * NULL: none), accepted without being read. */
typedef struct conftable {
        const conf_part_t *parts;
        size_t n;
        const char *const *foreign;
} conftable_t;

/* Bound on the configuration file's size. */
#define CONF_MAX_FILE_BYTES (1024 * 1024)

/* Zeroes every part's struct, then fills the defaults. */
int conftable_init_defaults(const conftable_t *t);
/* Frees what the parts' strings and lists hold; idempotent. */
void conftable_free(const conftable_t *t);
/* Applies a YAML document held in memory; name is used in messages. Keys
 * that are neither a setting, nor a prefix of one, nor foreign are errors. */
int conftable_apply_yaml(const conftable_t *t, const char *name, const char *buf, size_t len,
                         hg_error_t *err);
int conftable_apply_env(const conftable_t *t, hg_error_t *err);
/* One setting as "key=value" (a command line's --set), parsed and bounded as
 * its environment variable is. */
int conftable_set(const conftable_t *t, const char *assignment, hg_error_t *err);
/* Defaults, then path (NULL: none), then the environment. The caller
 * validates; on error the parts are freed and err says what and where. */
int conftable_load(const conftable_t *t, const char *path, hg_error_t *err);
/* Every setting as "path": value members of one object, in table order;
 * returns a malloc'd string (JSON text, YAML-compatible). */
char *conftable_dump(const conftable_t *t);
