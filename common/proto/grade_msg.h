/* A sealed grade's messages (docs/graders.md), parsed strictly wherever
 * they come from: the begin and finish specs hangar sends through
 * `hangar-driver ctl grade ...`, the grader side's findings and tree on the
 * grade's connection (the agent's container: untrusted), and the driver's
 * go (read by the grader side). Closed members, checked types, bounds
 * before allocation, duplicate keys refused (jsonx_load). Fuzzed
 * (tests/fuzz/fuzz_grade.c). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define GRADE_SPEC_MAX        (3u * 1024u * 1024u) /* a begin or finish spec's bytes */
#define GRADE_FILES_MAX       512u                 /* hidden test files */
#define GRADE_TESTS_BYTES_MAX (2u * 1024u * 1024u) /* their decoded bytes, all together */
#define GRADE_PATH_MAX        256u                 /* a test file's relative path */
#define GRADE_PATH_DEPTH_MAX  8u
#define GRADE_ARGV_MAX        64u
#define GRADE_ARG_MAX         4096u
#define GRADE_CWD_MAX         1024u
#define GRADE_TIMEOUT_MAX_S   86400u
#define GRADE_REPORT_MAX      60000u /* one frame */
#define GRADE_REPORT_DEFAULT  16384u
#define GRADE_OUTPUT_MAX      (1024u * 1024u) /* the exec's output, as hangar passes it in */
#define GRADE_MSG_MAX         8192u           /* findings, tree, go: one frame each */
/* The longest tests directory a go message names (HOME/grades/ID/tests):
 * a spec is refused when its go would not fit GRADE_MSG_MAX with it. */
#define GRADE_TESTS_DIR_MAX 512u

/* Why a grade is best_effort: a closed list, one bit each. */
typedef enum grade_reason {
        GRADE_R_TRIAL_RUNNING = 1u << 0,      /* the sweep did not end every process in time */
        GRADE_R_FOREIGN_PROCESS = 1u << 1,    /* a process of another uid in the container */
        GRADE_R_PID1_OPEN = 1u << 2,          /* PID 1 could have been the trial's (ptrace) */
        GRADE_R_GRADER_TRACED = 1u << 3,      /* the grader side had a tracer */
        GRADE_R_TOKEN_MISUSED = 1u << 4,      /* the grade's token used out of order */
        GRADE_R_REPORT_REFUSED = 1u << 5,     /* over its cap, a second report, a frame after it */
        GRADE_R_SPLIT_NOT_ACTIVE = 1u << 6,   /* the driver's verdict is not split-active */
        GRADE_R_PATH_WRITABLE = 1u << 7,      /* a PATH directory dropped: not root's alone */
        GRADE_R_PRELOAD_WRITABLE = 1u << 8,   /* /etc/ld.so.preload there and not root's alone */
        GRADE_R_RECORD_FAILED = 1u << 9,      /* hangar-ctl could not keep part of the grade */
        GRADE_R_GRADER_INCOMPLETE = 1u << 10, /* no grader side, or it ended before EXIT */
        GRADE_R_STATUS_MISMATCH = 1u << 11,   /* the exec's status is not the one the side saw */
        GRADE_R_SWEEP_FAILED = 1u << 12,      /* the sweep could not see the namespace */
        GRADE_R_OTHER_CONTAINERS = 1u << 13,  /* a container beside the agent's and the driver */
        GRADE_R_EXEC_LOST = 1u << 14,         /* hangar lost the exec: no status from its API */
} grade_reason_t;
#define GRADE_R_COUNT 15u

/* "trial-running", ...; NULL for a value outside the list. */
const char *grade_reason_name(uint32_t bit);
/* The bit for a name, 0 if unknown. */
uint32_t grade_reason_bit(const char *name);
/* ["trial-running", ...] in bit order. NULL on ENOMEM. */
json_t *grade_reasons_json(uint32_t reasons);

typedef struct grade_file {
        const char *path; /* in root */
        bool exec;        /* mode 0755, else 0644 */
        char *data;       /* decoded */
        size_t len;
} grade_file_t;

/* The begin spec:
 *   {"grade": "g-7", "tests": [{"path": "t/run.sh", "data_base64": "...",
 *    "exec": true}], "argv": ["/bin/sh", "..."], "cwd": "/workspace",
 *    "timeout_s": 600, "report_max": 16384, "connect_timeout_s": 120}
 * grade an id ([A-Za-z0-9._-]{1,64}); tests 0..GRADE_FILES_MAX regular files,
 * paths of components [A-Za-z0-9._+-]{1,64} (not "." or ".."), no file
 * both a file and a directory, no duplicates; argv 1..GRADE_ARGV_MAX
 * non-empty first; cwd absolute, no "..", no NUL. */
typedef struct grade_spec {
        json_t *root;
        const char *id, *cwd;
        grade_file_t *files;
        size_t n_files;
        const char **argv; /* argc entries then NULL */
        size_t argc;
        uint32_t timeout_s, report_max, connect_timeout_s;
} grade_spec_t;
int grade_spec_parse(const char *text, size_t len, grade_spec_t *ret, hg_error_t *err);
void grade_spec_free(grade_spec_t *s);

/* The finish spec: {"grade": "g-7", "exit_status": 0..255 | null,
 * "output_base64": "...", "spec_report": {...} | null} (the exec's status
 * and output, as hangar got them; output at most GRADE_OUTPUT_MAX decoded
 * bytes; the pod's spec check, `hangar-probe spec`, as hangar read it
 * after the grader's exec ended, or null when it could not read the pod).
 * The spec report must be one: no "role", pass/fail checks that add up to
 * its "result", and "other_containers", a list of at most
 * GRADE_CONTAINERS_MAX container names. Its judgement is pod_reasons:
 * other-containers when that list is not empty or the pod was not read,
 * split-not-active when the report fails. exit_status null: hangar lost the
 * grader's exec and has no status from the exec API (`hangar grade finish`):
 * exec_lost set, exit_status -1; the output is then what hangar kept. */
#define GRADE_CONTAINERS_MAX 64u
typedef struct grade_finish {
        json_t *root;
        const char *id;
        int exit_status; /* -1 when exec_lost */
        bool exec_lost;
        char *output;
        size_t output_len;
        uint32_t pod_reasons;
        json_t *other_containers; /* borrowed from root; NULL: the pod was not read */
} grade_finish_t;
int grade_finish_parse(const char *text, size_t len, grade_finish_t *ret, hg_error_t *err);
void grade_finish_free(grade_finish_t *f);

/* The grader side's findings (ASK, first): {"reasons": [names],
 * "sweep": {...}} with reasons from the list above that the grader side
 * may claim (not token-misused, report-refused, split-not-active,
 * record-failed, grader-incomplete, status-mismatch: those are the
 * driver's), and sweep an object (kept as the record's "sweep"). */
typedef struct grade_findings {
        json_t *root;
        uint32_t reasons;
        json_t *sweep; /* borrowed from root */
} grade_findings_t;
#define GRADE_SIDE_REASONS                                                          \
        (GRADE_R_TRIAL_RUNNING | GRADE_R_FOREIGN_PROCESS | GRADE_R_PID1_OPEN |      \
         GRADE_R_GRADER_TRACED | GRADE_R_PATH_WRITABLE | GRADE_R_PRELOAD_WRITABLE | \
         GRADE_R_SWEEP_FAILED)
int grade_findings_parse(const void *p, size_t n, grade_findings_t *ret, hg_error_t *err);
void grade_findings_free(grade_findings_t *f);

/* The workspace's tree hash (ASK, second): {"tree": "<64 hex>"}. */
int grade_tree_parse(const void *p, size_t n, char ret_hex[65], hg_error_t *err);

/* The driver's go (ANSWER): {"go": true, "grade", "tests", "cwd", "argv",
 * "timeout_s", "report_max"}, or {"go": false, "reason"}. */
typedef struct grade_go {
        json_t *root;
        bool go;
        const char *id, *tests, *cwd, *reason;
        const char **argv;
        size_t argc;
        uint32_t timeout_s, report_max;
} grade_go_t;
json_t *grade_go_json(const grade_spec_t *s, const char *tests_dir);
int grade_go_parse(const void *p, size_t n, grade_go_t *ret, hg_error_t *err);
void grade_go_free(grade_go_t *g);

/* A test file's path as the spec allows it. */
bool grade_path_ok(const char *path);
