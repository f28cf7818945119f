#include "grade.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "base64.h"
#include "cleanup.h"
#include "conn.h"
#include "fileio.h"
#include "grade_msg.h"
#include "jsonx.h"
#include "layout.h"
#include "record.h"
#include "split.h"
#include "token.h"

#define GRADES_DIR         "grades"
#define GRADE_HANDSHAKE_MS 2000
#define GRADE_FINDINGS_MS  30000 /* from the connection to the findings */
#define GRADE_SLACK_S      60    /* past the grader's timeout, for the tree and the report */
#define GRADE_STATE_FILE   "state.json"
#define GRADE_SEALED_FILE  "grade.json"
#define GRADE_OUTPUT_FILE  "output"
#define GRADE_REMOVE_DEPTH (GRADE_PATH_DEPTH_MAX + 4)

typedef enum grade_state {
        GS_NONE,      /* no grade in flight */
        GS_LISTENING, /* begun: waiting for the grader side's two connections */
        GS_FINDINGS,  /* connected: waiting for its findings */
        GS_TREE,      /* go sent: waiting for the workspace's tree */
        GS_REPORT,    /* tree in: waiting for the report */
        GS_EXIT,      /* report in: waiting for the grader's end */
        GS_DONE,      /* the connection is over: waiting for ctl grade finish */
} grade_state_t;

struct grade_ctx {
        char *home, *ctl;
        char instance[HANDSHAKE_INSTANCE_HEX_LEN + 1]; /* the daemon's, for the handshake */
        grade_state_t state;
        grade_spec_t spec;
        char *dir; /* hangar-ctl/grades/ID */
        token_t token;
        listener_t lis;
        bool lis_open;
        conn_t io, ctl_c;
        bool conn_open;
        int64_t deadline;
        uint32_t reasons;
        char tests_sha256[65];
        char tree[65];
        json_t *sweep;  /* the grader side's */
        json_t *report; /* parsed, or NULL */
        char *report_raw;
        size_t report_len;
        bool have_report, have_exit, tests_unpacked;
        frame_exit_t side_exit;
        char note[200];       /* why the connection ended early, for the record */
        uint64_t rejected;    /* connections the listener dropped (anyone on the loopback) */
        char restored_id[65]; /* the last grade a restore ended (ids are 1-64 bytes) */
};

static const char *state_name(grade_state_t s)
{
        switch (s) {
        case GS_NONE:
                return "none";
        case GS_LISTENING:
                return "listening";
        case GS_FINDINGS:
                return "findings";
        case GS_TREE:
                return "tree";
        case GS_REPORT:
                return "report";
        case GS_EXIT:
                return "exit";
        case GS_DONE:
                return "graded";
        default:
                return "?";
        }
}

/* ---- files ---- */

/* Removes everything under dirfd/name (a tree the driver made: regular
 * files and directories), never following a link. */
static int remove_tree_at(int parent, const char *name, unsigned depth)
{
        if (depth > GRADE_REMOVE_DEPTH)
                return -ELOOP;
        int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                if (errno == ENOENT)
                        return 0;
                if (errno == ENOTDIR || errno == ELOOP)
                        return unlinkat(parent, name, 0) < 0 ? -errno : 0;
                return -errno;
        }
        DIR *d = fdopendir(fd);
        if (!d) {
                (void)close(fd);
                return -errno;
        }
        int r = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                        continue;
                int q = remove_tree_at(dirfd(d), e->d_name, depth + 1);
                if (q < 0 && r == 0)
                        r = q;
        }
        (void)closedir(d);
        if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT && r == 0)
                r = -errno;
        return r;
}

static int remove_home_grade(grade_ctx_t *g, const char *id)
{
        _cleanup_free_ char *grades = record_path(g->home, GRADES_DIR);
        if (!grades)
                return -ENOMEM;
        _cleanup_close_ int fd = open(grades, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        return remove_tree_at(fd, id, 0);
}

/* SHA-256 over the tests in the spec's order: for each file its path, a
 * NUL, "x" or "-", its length as 16 hex digits and its bytes. */
static int tests_hash(const grade_spec_t *s, char hex[65])
{
        EVP_MD_CTX *md = EVP_MD_CTX_new();
        unsigned char out[32];
        unsigned outlen = 0;
        int ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL);
        for (size_t i = 0; ok && i < s->n_files; i++) {
                char meta[32];
                int n = snprintf(meta, sizeof(meta), "%c%016zx", s->files[i].exec ? 'x' : '-',
                                 s->files[i].len);
                ok = EVP_DigestUpdate(md, s->files[i].path, strlen(s->files[i].path) + 1) &&
                     EVP_DigestUpdate(md, meta, (size_t)n) &&
                     EVP_DigestUpdate(md, s->files[i].data, s->files[i].len);
        }
        ok = ok && EVP_DigestFinal_ex(md, out, &outlen) && outlen == sizeof(out);
        EVP_MD_CTX_free(md);
        if (!ok)
                return -EIO;
        for (unsigned i = 0; i < sizeof(out); i++)
                snprintf(hex + 2 * i, 3, "%02x", out[i]);
        return 0;
}

/* mkdirat that accepts what is already a directory (not a link). */
static int mkdir_open(int dirfd, const char *name, mode_t mode)
{
        if (mkdirat(dirfd, name, mode) < 0 && errno != EEXIST)
                return -errno;
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fchmod(fd, mode) < 0) {
                int e = -errno;
                (void)close(fd);
                return e;
        }
        return fd;
}

/* The tests into hangar-home/grades/ID/tests: directories 0755, files 0644
 * or 0755, each created (O_EXCL, O_NOFOLLOW) under a directory just made.
 * hangar-home is the driver's; the agent mounts it read-only. */
static int unpack_tests(grade_ctx_t *g)
{
        _cleanup_close_ int home = open(g->home, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (home < 0)
                return -errno;
        _cleanup_close_ int grades = mkdir_open(home, GRADES_DIR, 0755);
        if (grades < 0)
                return grades;
        int r = remove_tree_at(grades, g->spec.id, 0);
        if (r < 0)
                return r;
        _cleanup_close_ int gd = mkdir_open(grades, g->spec.id, 0755);
        if (gd < 0)
                return gd;
        _cleanup_close_ int root = mkdir_open(gd, "tests", 0755);
        if (root < 0)
                return root;
        for (size_t i = 0; i < g->spec.n_files; i++) {
                const grade_file_t *f = &g->spec.files[i];
                _cleanup_free_ char *path = strdup(f->path);
                if (!path)
                        return -ENOMEM;
                int dfd = fcntl(root, F_DUPFD_CLOEXEC, 0);
                if (dfd < 0)
                        return -errno;
                char *p = path, *slash;
                while ((slash = strchr(p, '/'))) {
                        *slash = '\0';
                        int nfd = mkdir_open(dfd, p, 0755);
                        (void)close(dfd);
                        if (nfd < 0)
                                return nfd;
                        dfd = nfd;
                        p = slash + 1;
                }
                mode_t mode = f->exec ? 0755 : 0644;
                int fd = openat(dfd, p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
                (void)close(dfd);
                if (fd < 0)
                        return -errno;
                r = fd_write_all(fd, f->data, f->len);
                if (r == 0 && fchmod(fd, mode) < 0)
                        r = -errno;
                if (close(fd) < 0 && r == 0)
                        r = -errno;
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- the record ---- */

static json_t *grade_json(grade_ctx_t *g, bool sealed)
{
        json_t *j =
            json_pack("{s:s, s:s, s:b, s:s, s:s?, s:O?}", "grade", g->spec.id, "state",
                      sealed ? "sealed" : state_name(g->state), "sealed", sealed, "tests_sha256",
                      g->tests_sha256, "tree", g->tree[0] ? g->tree : NULL, "sweep", g->sweep);
        if (!j)
                return NULL;
        json_object_set_new(j, "reasons", grade_reasons_json(g->reasons));
        json_t *argv = json_array();
        for (size_t i = 0; argv && i < g->spec.argc; i++)
                json_array_append_new(argv, json_string(g->spec.argv[i]));
        json_object_set_new(j, "argv", argv);
        json_object_set_new(j, "cwd", json_string(g->spec.cwd));
        json_object_set_new(j, "timeout_s", json_integer(g->spec.timeout_s));
        json_object_set_new(j, "rejected", json_integer((json_int_t)g->rejected));
        if (g->have_report) {
                json_object_set(j, "report", g->report ? g->report : json_null());
                _cleanup_free_ char *b64 = base64_encode(g->report_raw, g->report_len);
                json_object_set_new(j, "report_base64", json_string(b64 ? b64 : ""));
        }
        if (g->have_exit)
                json_object_set_new(j, "grader_side",
                                    json_pack("{s:s, s:i}", "end", frame_end_name(g->side_exit.end),
                                              "value", g->side_exit.value));
        if (g->note[0])
                json_object_set_new(j, "note", json_string(g->note));
        return j;
}

static void save_state(grade_ctx_t *g)
{
        _cleanup_json_ json_t *j = grade_json(g, false);
        if (!j || record_write_json(g->dir, GRADE_STATE_FILE, j, 0600) < 0)
                g->reasons |= GRADE_R_RECORD_FAILED;
}

/* ---- the connection ---- */

static void close_conn(grade_ctx_t *g, const char *note)
{
        if (note && !g->note[0])
                snprintf(g->note, sizeof(g->note), "%s", note);
        if (g->lis_open)
                listener_close(&g->lis);
        g->lis_open = false;
        if (g->conn_open) {
                conn_close(&g->io);
                conn_close(&g->ctl_c);
        }
        g->conn_open = false;
        token_wipe(&g->token, sizeof(g->token));
        if (!g->have_exit)
                g->reasons |= GRADE_R_GRADER_INCOMPLETE;
        /* The hidden tests leave hangar-home with the grade's connection. */
        if (g->tests_unpacked && remove_home_grade(g, g->spec.id) < 0)
                g->reasons |= GRADE_R_RECORD_FAILED;
        g->state = GS_DONE;
        save_state(g);
}

static void refuse(grade_ctx_t *g, const char *what, const char *detail)
{
        char msg[200];
        snprintf(msg, sizeof(msg), "%s%s%s", what ? what : "", what && detail ? ": " : "",
                 detail ? detail : "");
        g->reasons |= GRADE_R_REPORT_REFUSED;
        close_conn(g, msg);
}

static void on_reject(void *userdata, listener_reject_t why, const char *detail)
{
        grade_ctx_t *g = userdata;
        (void)detail;
        g->rejected++;
        /* The right token out of order: it leaked. */
        if (why == LISTENER_REJECT_REPLAYED)
                g->reasons |= GRADE_R_TOKEN_MISUSED;
}

static void send_go(grade_ctx_t *g)
{
        _cleanup_free_ char *tests = NULL;
        int r =
            asprintf(&tests, "%s/%s/%s/tests", g->home, GRADES_DIR, g->spec.id) < 0 ? -ENOMEM : 0;
        /* The spec was judged to fit the go message with a tests directory
         * this long at most (grade_spec_parse). */
        if (r == 0 && strlen(tests) > GRADE_TESTS_DIR_MAX)
                r = -ENAMETOOLONG;
        if (r == 0)
                r = unpack_tests(g);
        g->tests_unpacked = true; /* partly, perhaps: removed with the connection */
        _cleanup_json_ json_t *go = r == 0 ? grade_go_json(&g->spec, tests) : NULL;
        _cleanup_free_ char *text = go ? jsonx_dumps(go, JSON_COMPACT) : NULL;
        if (!text) {
                g->reasons |= GRADE_R_RECORD_FAILED;
                static const char no[] = "{\"go\":false,\"reason\":\"the tests could not be "
                                         "unpacked\"}";
                (void)conn_queue(&g->ctl_c, FRAME_ANSWER, no, sizeof(no) - 1, NULL, 0);
                (void)conn_flush(&g->ctl_c);
                return close_conn(g, "the tests could not be unpacked into hangar-home");
        }
        if (conn_queue(&g->ctl_c, FRAME_ANSWER, text, strlen(text), NULL, 0) < 0)
                return close_conn(g, "cannot queue the go");
        (void)conn_flush(&g->ctl_c);
        g->state = GS_TREE;
        g->deadline = conn_now_ms() + ((int64_t)g->spec.timeout_s + GRADE_SLACK_S) * 1000;
        save_state(g);
}

static void on_frame(grade_ctx_t *g, const frame_t *f)
{
        hg_error_t err = {0};
        switch (f->type) {
        case FRAME_ASK:
                if (g->state == GS_FINDINGS) {
                        grade_findings_t fi;
                        if (grade_findings_parse(f->payload, f->length, &fi, &err) < 0)
                                return refuse(g, "bad findings", err.message);
                        g->reasons |= fi.reasons;
                        g->sweep = json_incref(fi.sweep);
                        grade_findings_free(&fi);
                        return send_go(g);
                }
                if (g->state == GS_TREE) {
                        if (grade_tree_parse(f->payload, f->length, g->tree, &err) < 0)
                                return refuse(g, "bad tree", err.message);
                        g->state = GS_REPORT;
                        return save_state(g);
                }
                return refuse(g, NULL, "a message out of order");
        case FRAME_STDOUT:
                if (g->state != GS_REPORT)
                        return refuse(g, NULL, "a report out of order (one per grade)");
                if (f->length > g->spec.report_max)
                        return refuse(g, NULL, "the report is over its cap");
                g->report_raw = malloc(f->length + 1);
                if (!g->report_raw) {
                        g->reasons |= GRADE_R_RECORD_FAILED;
                        return close_conn(g, "out of memory");
                }
                memcpy(g->report_raw, f->payload, f->length);
                g->report_raw[f->length] = '\0';
                g->report_len = f->length;
                g->have_report = true;
                /* Kept as JSON when it is a JSON value, and as bytes always. */
                if (f->length && jsonx_load(g->report_raw, g->report_len, 16, &g->report, NULL) < 0)
                        g->report = NULL;
                g->state = GS_EXIT;
                return save_state(g);
        case FRAME_EXIT:
                if (g->state != GS_EXIT)
                        return refuse(g, NULL, "the grader's end out of order");
                if (frame_exit_decode(f, &g->side_exit, &err) < 0)
                        return refuse(g, "bad EXIT", err.message);
                g->have_exit = true;
                return close_conn(g, NULL);
        case FRAME_HELLO:
        case FRAME_WELCOME:
        case FRAME_CHALLENGE:
        case FRAME_PROOF:
        case FRAME_STDIN:
        case FRAME_STDERR:
        case FRAME_SIGNAL:
        case FRAME_RESIZE:
        case FRAME_ANSWER:
        case FRAME_RUN:
        case FRAME_RUN_RESULT:
        default:
                return refuse(g, "a frame not allowed on a grade's connection",
                              frame_type_name(f->type));
        }
}

static void pump(grade_ctx_t *g)
{
        hg_error_t err = {0};
        frame_t f;
        int r;
        /* Nothing but its EOF may come on io. */
        if ((r = conn_next(&g->io, &f, &err)) != 0)
                return refuse(g, NULL, r < 0 ? err.message : "a frame on io");
        while (g->conn_open && (r = conn_next(&g->ctl_c, &f, &err)) == 1)
                on_frame(g, &f);
        if (!g->conn_open)
                return;
        if (r < 0)
                return refuse(g, NULL, err.message);
        if (g->ctl_c.eof || g->io.eof)
                close_conn(g, "the grader side closed its connection");
}

/* ---- the daemon's side ---- */

int grade_ctx_new(const char *home, const char *ctl, const char *instance, grade_ctx_t **ret)
{
        if (strlen(instance) != HANDSHAKE_INSTANCE_HEX_LEN)
                return -EINVAL;
        grade_ctx_t *g = calloc(1, sizeof(*g));
        if (!g || !(g->home = strdup(home)) || !(g->ctl = strdup(ctl))) {
                grade_ctx_free(g);
                return -ENOMEM;
        }
        memcpy(g->instance, instance, sizeof(g->instance));
        g->lis.fd = -1;
        /* Tests an earlier daemon unpacked are nobody's now. */
        _cleanup_close_ int hfd = open(home, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (hfd >= 0)
                (void)remove_tree_at(hfd, GRADES_DIR, 0);
        *ret = g;
        return 0;
}

static void reset(grade_ctx_t *g)
{
        if (g->conn_open || g->lis_open)
                close_conn(g, NULL);
        grade_spec_free(&g->spec);
        free(g->dir);
        json_decref(g->sweep);
        json_decref(g->report);
        free(g->report_raw);
        char *home = g->home, *ctl = g->ctl;
        char instance[sizeof(g->instance)], restored[sizeof(g->restored_id)];
        memcpy(instance, g->instance, sizeof(instance));
        memcpy(restored, g->restored_id, sizeof(restored));
        *g = (grade_ctx_t){.home = home, .ctl = ctl, .lis.fd = -1};
        memcpy(g->instance, instance, sizeof(instance));
        memcpy(g->restored_id, restored, sizeof(restored));
}

void grade_ctx_restored(grade_ctx_t *g, const char *instance)
{
        if (strlen(instance) == HANDSHAKE_INSTANCE_HEX_LEN)
                memcpy(g->instance, instance, sizeof(g->instance));
        if (g->state == GS_NONE)
                return;
        close_conn(g, "the sandbox was restored from a checkpoint");
        /* Its record, never sealed: grade.json says restored, so a show
         * answers that and no finish can seal it later. */
        _cleanup_json_ json_t *j = grade_json(g, false);
        if (j) {
                json_object_set_new(j, "state", json_string("restored"));
                (void)record_write_json(g->dir, GRADE_SEALED_FILE, j, 0600);
        }
        snprintf(g->restored_id, sizeof(g->restored_id), "%s", g->spec.id);
        reset(g);
}

void grade_ctx_free(grade_ctx_t *g)
{
        if (!g)
                return;
        reset(g);
        free(g->home);
        free(g->ctl);
        free(g);
}

bool grade_busy(const grade_ctx_t *g)
{
        return g && g->state != GS_NONE;
}

static json_t *reply_error(const char *msg, const char *detail)
{
        char text[ERROR_MESSAGE_MAX];
        snprintf(text, sizeof(text), "%s%s%s", msg, detail ? ": " : "", detail ? detail : "");
        return json_pack("{s:b, s:s}", "ok", 0, "error", text);
}

static bool split_active(const char *ctl)
{
        _cleanup_free_ char *path = record_path(ctl, LAYOUT_CTL_VERDICT);
        split_decision_t d = {0};
        if (!path)
                return false;
        split_gate_decide(SPLIT_REQUIRED, path, &d);
        return d.gate == SPLIT_GATE_SPLIT;
}

static json_t *op_begin(grade_ctx_t *g, const ctlreq_t *q, bool turn_active)
{
        if (turn_active)
                return reply_error("turn-running: a grade waits for the turn to end", NULL);
        if (g->state != GS_NONE)
                return reply_error("one grade at a time: finish the one in flight", g->spec.id);
        hg_error_t err = {0};
        grade_spec_t s;
        if (!q->spec || grade_spec_parse(q->spec, q->spec_len, &s, &err) < 0)
                return reply_error("bad grade spec", q->spec ? err.message : "no spec");
        _cleanup_free_ char *grades = record_path(g->ctl, GRADES_DIR);
        _cleanup_free_ char *dir = NULL;
        if (!grades || asprintf(&dir, "%s/%s", grades, s.id) < 0) {
                grade_spec_free(&s);
                return reply_error("out of memory", NULL);
        }
        /* A grade id is used once: its record is never rewritten. */
        if ((mkdir(grades, 0700) < 0 && errno != EEXIST) || mkdir(dir, 0700) < 0) {
                int e = errno;
                grade_spec_free(&s);
                return reply_error(e == EEXIST ? "that grade id has a record already"
                                               : "cannot make the grade's record",
                                   strerror(e));
        }
        g->spec = s;
        g->dir = TAKE_PTR(dir);
        if (tests_hash(&g->spec, g->tests_sha256) < 0) {
                reset(g);
                return reply_error("cannot hash the tests", NULL);
        }
        if (!split_active(g->ctl))
                g->reasons |= GRADE_R_SPLIT_NOT_ACTIVE;
        if (token_generate(&g->token) < 0 ||
            listener_open(&g->lis, &g->token, g->instance, GRADE_HANDSHAKE_MS, &err) < 0) {
                reset(g);
                return reply_error("cannot listen", err.message);
        }
        g->lis_open = true;
        g->state = GS_LISTENING;
        g->deadline = conn_now_ms() + (int64_t)g->spec.connect_timeout_s * 1000;
        save_state(g);
        if (g->reasons & GRADE_R_RECORD_FAILED) {
                reset(g);
                return reply_error("cannot write the grade's record in hangar-ctl", NULL);
        }
        char hex[TOKEN_HEX_LEN + 1];
        token_to_hex(&g->token, hex);
        json_t *j = json_pack("{s:b, s:s, s:s, s:i, s:s}", "ok", 1, "grade", g->spec.id, "token",
                              hex, "port", g->lis.port, "tests_sha256", g->tests_sha256);
        token_wipe(hex, sizeof(hex));
        return j;
}

static json_t *op_finish(grade_ctx_t *g, const ctlreq_t *q)
{
        hg_error_t err = {0};
        grade_finish_t f;
        if (!q->spec || grade_finish_parse(q->spec, q->spec_len, &f, &err) < 0)
                return reply_error("bad finish spec", q->spec ? err.message : "no spec");
        if (g->state == GS_NONE || strcmp(f.id, g->spec.id) != 0) {
                bool restored = strcmp(f.id, g->restored_id) == 0;
                grade_finish_free(&f);
                if (restored)
                        return reply_error("restored: the grade began before the sandbox was "
                                           "restored from a checkpoint; begin a new one",
                                           NULL);
                return reply_error("no grade in flight with that id", NULL);
        }
        /* hangar's exec ended: whatever the grader side still had is over. */
        if (g->state != GS_DONE)
                close_conn(g, "ctl grade finish before the grader side's end");
        /* What ran beside the agent's container, from hangar's reading of
         * the pod after the grader's exec ended (docs/graders.md). */
        g->reasons |= f.pod_reasons;
        /* The exec's status is hangar's; the grader side's is its word.
         * hangar that lost the exec has none: the record keeps the side's
         * word (or null), and the grade is best_effort (exec-lost). */
        int side_status = -1;
        if (g->have_exit)
                side_status = g->side_exit.end == FRAME_END_SIGNALED ? 128 + g->side_exit.value
                                                                     : g->side_exit.value;
        if (f.exec_lost)
                g->reasons |= GRADE_R_EXEC_LOST;
        else if (g->have_exit && side_status != f.exit_status)
                g->reasons |= GRADE_R_STATUS_MISMATCH;
        _cleanup_free_ char *outpath = record_path(g->dir, GRADE_OUTPUT_FILE);
        if (!outpath || file_write_atomic(outpath, f.output, f.output_len, 0600, 0) < 0)
                g->reasons |= GRADE_R_RECORD_FAILED;
        _cleanup_json_ json_t *j = grade_json(g, true);
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned mdlen = 0;
        char hex[65] = "";
        if (EVP_Digest(f.output, f.output_len, md, &mdlen, EVP_sha256(), NULL) && mdlen == 32)
                for (unsigned i = 0; i < 32; i++)
                        snprintf(hex + 2 * i, 3, "%02x", md[i]);
        if (j) {
                int status = f.exec_lost ? side_status : f.exit_status;
                json_object_set_new(j, "exit_status",
                                    status >= 0 ? json_integer(status) : json_null());
                if (f.exec_lost)
                        json_object_set_new(j, "exit_status_from",
                                            json_string(g->have_exit ? "grader-side" : "none"));
                json_object_set_new(j, "output_sha256", json_string(hex));
                json_object_set_new(j, "output_bytes", json_integer((json_int_t)f.output_len));
                json_object_set(j, "other_containers",
                                f.other_containers ? f.other_containers : json_null());
        }
        bool f_lost = f.exec_lost;
        grade_finish_free(&f);
        if (!j) {
                reset(g);
                return reply_error("out of memory", NULL);
        }
        /* A record missing a member (out of memory while it was built)
         * is not sealed at all. */
        if (!json_is_array(json_object_get(j, "reasons")) ||
            !(json_is_integer(json_object_get(j, "exit_status")) ||
              (f_lost && json_is_null(json_object_get(j, "exit_status")))) ||
            !json_is_string(json_object_get(j, "output_sha256"))) {
                reset(g);
                return reply_error("out of memory", NULL);
        }
        /* trust is the last word: isolated only if no reason was found. The
         * record is written first without it, so that a failed write is
         * itself a reason (record-failed); a record without trust is not
         * isolated. */
        bool rec_ok = record_write_json(g->dir, GRADE_SEALED_FILE, j, 0600) == 0;
        if (!rec_ok) {
                g->reasons |= GRADE_R_RECORD_FAILED;
                json_object_set_new(j, "reasons", grade_reasons_json(g->reasons));
        }
        json_object_set_new(j, "trust", json_string(g->reasons ? "best_effort" : "isolated"));
        if (rec_ok && record_write_json(g->dir, GRADE_SEALED_FILE, j, 0600) < 0) {
                g->reasons |= GRADE_R_RECORD_FAILED;
                json_object_set_new(j, "reasons", grade_reasons_json(g->reasons));
                json_object_set_new(j, "trust", json_string("best_effort"));
        }
        json_t *reply = json_pack("{s:b, s:O}", "ok", 1, "grade", j);
        reset(g);
        return reply;
}

static json_t *op_show(grade_ctx_t *g, const ctlreq_t *q)
{
        const char *id = json_string_value(json_object_get(q->root, "grade"));
        if (!ctlreq_turn_id_ok(id))
                return reply_error("\"grade\" must be 1-64 of [A-Za-z0-9._-]", NULL);
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/%s/%s/%s", g->ctl, GRADES_DIR, id, GRADE_SEALED_FILE) < 0)
                return reply_error("out of memory", NULL);
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r = file_read_bounded(path, GRADE_SPEC_MAX, &text, &len);
        if (r == -ENOENT && g->state != GS_NONE && strcmp(id, g->spec.id) == 0) {
                json_t *j = grade_json(g, false);
                return json_pack("{s:b, s:o}", "ok", 1, "grade", j);
        }
        if (r < 0)
                return reply_error("no sealed grade with that id", strerror(-r));
        json_t *j = NULL;
        if (jsonx_load(text, len, 32, &j, NULL) < 0)
                return reply_error("the grade's record is unreadable", NULL);
        return json_pack("{s:b, s:o}", "ok", 1, "grade", j);
}

json_t *grade_ctl(grade_ctx_t *g, const ctlreq_t *q, bool turn_active)
{
        switch (q->op) {
        case CTLREQ_GRADE_BEGIN:
                return op_begin(g, q, turn_active);
        case CTLREQ_GRADE_FINISH:
                return op_finish(g, q);
        case CTLREQ_GRADE_SHOW:
                return op_show(g, q);
        default:
                return reply_error("not a grade op", NULL);
        }
}

/* ---- the loop ---- */

void grade_pollfds(const grade_ctx_t *g, struct pollfd p[GRADE_POLLFDS])
{
        for (size_t i = 0; i < GRADE_POLLFDS; i++)
                p[i] = (struct pollfd){.fd = -1};
        if (g->lis_open && g->lis.fd >= 0)
                (void)listener_pollfds(&g->lis, p);
        if (g->conn_open) {
                const conn_t *c[2] = {&g->io, &g->ctl_c};
                for (size_t i = 0; i < 2; i++) {
                        short ev =
                            (c[i]->eof ? 0 : POLLIN) | (conn_out_pending(c[i]) ? POLLOUT : 0);
                        p[LISTENER_PENDING_MAX + 1 + i] =
                            (struct pollfd){.fd = ev ? c[i]->fd : -1, .events = ev};
                }
        }
}

static void conn_events(conn_t *c, short revents)
{
        if ((revents & (POLLIN | POLLHUP | POLLERR)) && conn_fill(c) < 0)
                c->eof = true;
        if ((revents & POLLOUT) && conn_flush(c) < 0)
                c->eof = true;
}

void grade_process(grade_ctx_t *g, const struct pollfd p[GRADE_POLLFDS])
{
        if (!g)
                return;
        if (g->lis_open && g->lis.fd >= 0) {
                size_t n = 0;
                while (n < LISTENER_PENDING_MAX + 1 && p[n].fd >= 0)
                        n++;
                listener_process(&g->lis, p, n, NULL, on_reject, g);
                if (g->lis.have_ctl && g->state == GS_LISTENING) {
                        g->io = g->lis.io;
                        g->ctl_c = g->lis.ctl;
                        g->lis.have_io = g->lis.have_ctl = false; /* handed over */
                        g->conn_open = true;
                        token_wipe(&g->token, sizeof(g->token));
                        token_wipe(&g->lis.token, sizeof(g->lis.token));
                        g->state = GS_FINDINGS;
                        g->deadline = conn_now_ms() + GRADE_FINDINGS_MS;
                        save_state(g);
                }
        }
        if (g->conn_open) {
                short ev_io = p[LISTENER_PENDING_MAX + 1].revents;
                short ev_ctl = p[LISTENER_PENDING_MAX + 2].revents;
                if (ev_io)
                        conn_events(&g->io, ev_io);
                if (ev_ctl)
                        conn_events(&g->ctl_c, ev_ctl);
                pump(g);
                if (g->conn_open && conn_out_pending(&g->ctl_c) && conn_flush(&g->ctl_c) < 0)
                        close_conn(g, "the grader side's connection failed");
        }
        if ((g->state == GS_LISTENING || g->conn_open) && conn_now_ms() >= g->deadline)
                close_conn(g, g->state == GS_LISTENING ? "no grader side within the connect timeout"
                                                       : "the grader side ran past its deadline");
}

int64_t grade_next_deadline(const grade_ctx_t *g)
{
        if (!g || !(g->state == GS_LISTENING || g->conn_open))
                return INT64_MAX;
        int64_t d = g->deadline;
        if (g->lis_open && g->lis.fd >= 0) {
                int64_t l = listener_next_deadline(&g->lis);
                if (l < d)
                        d = l;
        }
        return d;
}
