/* Unit tests for common/execcred: the user.exec stanza (every member, what
 * is refused), KUBERNETES_EXEC_INFO, the ExecCredential a plugin prints
 * (every status member, bad JSON, wrong apiVersion or kind, no token, one
 * half of a certificate pair, expired or malformed timestamps), RFC 3339
 * times, and running real plugins (shell scripts written here): what they
 * are given (args, env, exec info, stdin, no other descriptor) and each
 * failure (not found, not executable, non-zero exit with its stderr, killed,
 * too much output, a timeout that kills the plugin's whole group). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "execcred.h"
#include "fileio.h"
#include "strbuf.h"
#include "strparse.h"
#include "unit.h"

#define NOW ((time_t)1767312000) /* 2026-01-02T00:00:00Z */

static char dir[4096];

static void setup(void)
{
        unit_mkdtemp(dir, sizeof(dir));
        ck_assert_int_eq(chdir("/"), 0);
}

static void teardown(void)
{
        unit_rmtree(dir);
}

#define ck_assert_msg_has(err, needle)                                                       \
        ck_assert_msg(strstr((err).message, (needle)), "message lacks \"%s\": %s", (needle), \
                      (err).message)

static void config_freep(execcred_config_t *c)
{
        execcred_config_free(c);
}
static void cred_clearp(execcred_t *c)
{
        execcred_clear(c);
}
#define _config_ __attribute__((cleanup(config_freep)))
#define _cred_   __attribute__((cleanup(cred_clearp)))

/* ---- the stanza ---- */

START_TEST(config_every_member)
{
        _unit_json_ json_t *j = unit_json(
            "{\"command\":\"gke-gcloud-auth-plugin\",\"args\":[\"--a\",\"b c\"],"
            "\"env\":[{\"name\":\"FOO\",\"value\":\"1\"},{\"name\":\"BAR\",\"value\":\"\"}],"
            "\"apiVersion\":\"client.authentication.k8s.io/v1\",\"interactiveMode\":\"Never\","
            "\"provideClusterInfo\":true,\"installHint\":\"apt install it\","
            "\"somethingNew\":1}");
        _config_ execcred_config_t c = {0};
        hg_error_t err = {0};
        ck_assert_msg(execcred_config_parse(j, "/etc/kube", &c, &err) == 0, "%s", err.message);
        ck_assert_str_eq(c.command, "gke-gcloud-auth-plugin"); /* on PATH: not resolved */
        ck_assert_str_eq(c.args[0], "--a");
        ck_assert_str_eq(c.args[1], "b c");
        ck_assert_ptr_null(c.args[2]);
        ck_assert_str_eq(c.env[0], "FOO=1");
        ck_assert_str_eq(c.env[1], "BAR=");
        ck_assert_ptr_null(c.env[2]);
        ck_assert_str_eq(c.api_version, EXECCRED_API_V1);
        ck_assert_int_eq(c.interactive, EXECCRED_INTERACTIVE_NEVER);
        ck_assert(c.provide_cluster_info);
        ck_assert_str_eq(c.install_hint, "apt install it");
}
END_TEST

START_TEST(config_defaults_and_paths)
{
        hg_error_t err = {0};
        /* v1beta1 without interactiveMode: IfAvailable; no args, env. */
        _unit_json_ json_t *beta = unit_json("{\"command\":\"./bin/plugin\",\"apiVersion\":"
                                             "\"client.authentication.k8s.io/v1beta1\"}");
        _config_ execcred_config_t b = {0};
        ck_assert_msg(execcred_config_parse(beta, "/etc/kube", &b, &err) == 0, "%s", err.message);
        ck_assert_int_eq(b.interactive, EXECCRED_INTERACTIVE_IF_AVAILABLE);
        ck_assert_ptr_null(b.args[0]);
        ck_assert_ptr_null(b.env[0]);
        ck_assert(!b.provide_cluster_info);
        ck_assert_ptr_null(b.install_hint);
        /* A relative path is the kubeconfig's directory's. */
        ck_assert_str_eq(b.command, "/etc/kube/./bin/plugin");

        _unit_json_ json_t *abs = unit_json(
            "{\"command\":\"/usr/bin/p\",\"apiVersion\":\"client.authentication.k8s.io/v1\","
            "\"interactiveMode\":\"IfAvailable\",\"provideClusterInfo\":false,\"args\":null}");
        _config_ execcred_config_t a = {0};
        ck_assert_msg(execcred_config_parse(abs, "/etc/kube", &a, &err) == 0, "%s", err.message);
        ck_assert_str_eq(a.command, "/usr/bin/p");
        ck_assert_int_eq(a.interactive, EXECCRED_INTERACTIVE_IF_AVAILABLE);
}
END_TEST

static void assert_config_fails(const char *text, const char *want)
{
        _unit_json_ json_t *j = unit_json(text);
        execcred_config_t c = {.command = (char *)"untouched"};
        hg_error_t err = {0};
        int r = execcred_config_parse(j, "/d", &c, &err);
        ck_assert_msg(r < 0, "accepted: %s", text);
        ck_assert_str_eq(c.command, "untouched");
        ck_assert_msg(strstr(err.message, want), "for %s: message lacks \"%s\": %s", text, want,
                      err.message);
}

#define V1 "\"apiVersion\":\"client.authentication.k8s.io/v1\""
#define IM ",\"interactiveMode\":\"Never\""

START_TEST(config_refused)
{
        assert_config_fails("[]", "exec must be an object");
        assert_config_fails("{" V1 IM "}", "command must be set");
        assert_config_fails("{\"command\":\"\"," V1 IM "}", "command must be set");
        assert_config_fails("{\"command\":7," V1 IM "}", "command must be a string");
        assert_config_fails("{\"command\":\"p\"}", "apiVersion must be set");
        assert_config_fails("{\"command\":\"p\",\"apiVersion\":"
                            "\"client.authentication.k8s.io/v1alpha1\"}",
                            "no longer supported");
        assert_config_fails("{\"command\":\"p\",\"apiVersion\":\"v1\"" IM "}", "is not");
        assert_config_fails("{\"command\":\"p\"," V1 "}", "interactiveMode must be set");
        assert_config_fails("{\"command\":\"p\"," V1 ",\"interactiveMode\":\"Always\"}",
                            "interactiveMode Always needs a terminal");
        assert_config_fails("{\"command\":\"p\"," V1 ",\"interactiveMode\":\"Sometimes\"}",
                            "is not Never, IfAvailable or Always");
        assert_config_fails("{\"command\":\"p\"," V1 ",\"interactiveMode\":true}",
                            "interactiveMode must be a string");
        assert_config_fails("{\"command\":\"p\"," V1 IM ",\"args\":\"-x\"}", "args must be a list");
        assert_config_fails("{\"command\":\"p\"," V1 IM ",\"args\":[\"a\",1]}", "args[1]");
        assert_config_fails("{\"command\":\"p\"," V1 IM ",\"env\":{}}", "env must be a list");
        assert_config_fails("{\"command\":\"p\"," V1 IM ",\"env\":[{\"value\":\"v\"}]}", "env[0]");
        assert_config_fails("{\"command\":\"p\"," V1 IM ",\"env\":[{\"name\":\"A=B\",\"value\":"
                            "\"v\"}]}",
                            "env[0]");
        assert_config_fails("{\"command\":\"p\"," V1 IM ",\"env\":[{\"name\":\"A\",\"value\":1}]}",
                            "env[0]");
        assert_config_fails("{\"command\":\"p\"," V1 IM ",\"provideClusterInfo\":\"yes\"}",
                            "provideClusterInfo must be true or false");
        assert_config_fails("{\"command\":\"p\"," V1 IM ",\"installHint\":[]}",
                            "installHint must be a string");
}
END_TEST

START_TEST(exec_info)
{
        _unit_json_ json_t *j = unit_json("{\"command\":\"p\"," V1 IM "}");
        _config_ execcred_config_t c = {0};
        hg_error_t err = {0};
        ck_assert_int_eq(execcred_config_parse(j, "/d", &c, &err), 0);
        _unit_json_ json_t *cluster =
            unit_json("{\"server\":\"https://k:6443\",\"certificate-authority-data\":\"Q0E=\"}");
        /* Not asked for: no cluster, even when there is one. */
        _cleanup_free_ char *plain = execcred_exec_info(&c, cluster);
        ck_assert_ptr_nonnull(plain);
        _unit_json_ json_t *p = unit_json(plain);
        ck_assert_json_eq_text(p, "{\"apiVersion\":\"client.authentication.k8s.io/v1\","
                                  "\"kind\":\"ExecCredential\",\"spec\":{\"interactive\":false}}");
        c.provide_cluster_info = true;
        _cleanup_free_ char *with = execcred_exec_info(&c, cluster);
        _unit_json_ json_t *w = unit_json(with);
        ck_assert_json_eq_text(w, "{\"apiVersion\":\"client.authentication.k8s.io/v1\","
                                  "\"kind\":\"ExecCredential\",\"spec\":{\"interactive\":false,"
                                  "\"cluster\":{\"server\":\"https://k:6443\","
                                  "\"certificate-authority-data\":\"Q0E=\"}}}");
}
END_TEST

/* ---- the answer ---- */

static int parse(const char *text, const char *version, execcred_t *ret, hg_error_t *err)
{
        return execcred_parse(text, strlen(text), version, NOW, ret, err);
}

#define ANS(status)                                                                        \
        "{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\"," \
        "\"status\":" status "}"

START_TEST(answer_every_field)
{
        hg_error_t err = {0};
        _cred_ execcred_t t = {0};
        ck_assert_msg(parse(ANS("{\"token\":\"abc.def\"}"), EXECCRED_API_V1, &t, &err) == 0, "%s",
                      err.message);
        ck_assert_str_eq(t.token, "abc.def");
        ck_assert_ptr_null(t.cert_pem);
        ck_assert_ptr_null(t.key_pem);
        ck_assert_int_eq(t.expiry, 0);

        _cred_ execcred_t all = {0};
        ck_assert_msg(parse(ANS("{\"token\":\"tok\",\"clientCertificateData\":\"CERT\","
                                "\"clientKeyData\":\"KEY\","
                                "\"expirationTimestamp\":\"2026-01-02T01:00:00Z\"}"),
                            EXECCRED_API_V1, &all, &err) == 0,
                      "%s", err.message);
        ck_assert_str_eq(all.token, "tok");
        ck_assert_str_eq(all.cert_pem, "CERT");
        ck_assert_str_eq(all.key_pem, "KEY");
        ck_assert_int_eq(all.expiry, NOW + 3600);

        /* A pair without a token; a spec echoed back and unknown members. */
        _cred_ execcred_t pair = {0};
        ck_assert_msg(
            parse("{\"kind\":\"ExecCredential\",\"apiVersion\":"
                  "\"client.authentication.k8s.io/v1beta1\",\"spec\":{\"interactive\":false},"
                  "\"status\":{\"clientCertificateData\":\"C\",\"clientKeyData\":\"K\","
                  "\"token\":\"\",\"expirationTimestamp\":null,\"extra\":[1]},\"more\":{}}",
                  EXECCRED_API_V1BETA1, &pair, &err) == 0,
            "%s", err.message);
        ck_assert_ptr_null(pair.token); /* "" is no token */
        ck_assert_str_eq(pair.cert_pem, "C");
        ck_assert_int_eq(pair.expiry, 0);
}
END_TEST

static void assert_parse_fails(const char *text, int code, const char *want)
{
        execcred_t c = {.token = (char *)"untouched"};
        hg_error_t err = {0};
        int r = parse(text, EXECCRED_API_V1, &c, &err);
        ck_assert_msg(r == code, "for %s: %d, want %d (%s)", text, r, code, err.message);
        ck_assert_str_eq(c.token, "untouched");
        ck_assert_msg(strstr(err.message, want), "for %s: message lacks \"%s\": %s", text, want,
                      err.message);
}

START_TEST(answer_refused)
{
        assert_parse_fails("", -EINVAL, "printed nothing");
        assert_parse_fails("{\"apiVersion\":", -EINVAL, "bad JSON");
        assert_parse_fails("token: abc", -EINVAL, "bad JSON");
        assert_parse_fails(ANS("{\"token\":\"a\"}") " trailing", -EINVAL, "bad JSON");
        assert_parse_fails("[\"ExecCredential\"]", -EINVAL, "not an ExecCredential object");
        assert_parse_fails("{\"kind\":\"ExecCredential\",\"status\":{\"token\":\"a\"}}", -EINVAL,
                           "no apiVersion");
        assert_parse_fails("{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\","
                           "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"a\"}}",
                           -EINVAL, "but the kubeconfig asks for client.authentication.k8s.io/v1");
        assert_parse_fails("{\"apiVersion\":\"client.authentication.k8s.io/v1\","
                           "\"kind\":\"Status\",\"status\":{\"token\":\"a\"}}",
                           -EINVAL, "kind \"Status\", not ExecCredential");
        assert_parse_fails("{\"apiVersion\":\"client.authentication.k8s.io/v1\","
                           "\"status\":{\"token\":\"a\"}}",
                           -EINVAL, "not ExecCredential");
        assert_parse_fails("{\"apiVersion\":\"client.authentication.k8s.io/v1\","
                           "\"kind\":\"ExecCredential\"}",
                           -EINVAL, "has no status");
        assert_parse_fails(ANS("\"abc\""), -EINVAL, "status is not an object");
        assert_parse_fails(ANS("{}"), -EINVAL, "no token and no client certificate");
        assert_parse_fails(ANS("{\"token\":\"\"}"), -EINVAL, "no token");
        assert_parse_fails(ANS("{\"token\":42}"), -EINVAL, "status.token must be a string");
        assert_parse_fails(ANS("{\"clientCertificateData\":\"C\"}"), -EINVAL,
                           "clientCertificateData without clientKeyData");
        assert_parse_fails(ANS("{\"token\":\"t\",\"clientKeyData\":\"K\"}"), -EINVAL,
                           "clientKeyData without clientCertificateData");
        assert_parse_fails(ANS("{\"token\":\"t\\r\\nX-Evil: 1\"}"), -EINVAL, "control characters");
        assert_parse_fails(
            ANS("{\"token\":\"t\",\"expirationTimestamp\":\"2026-01-01T23:59:59Z\"}"), -EKEYEXPIRED,
            "expired at 2026-01-01T23:59:59Z");
        /* Expiring this very second is expired too. */
        assert_parse_fails(
            ANS("{\"token\":\"t\",\"expirationTimestamp\":\"2026-01-02T00:00:00Z\"}"), -EKEYEXPIRED,
            "expired");
        assert_parse_fails(ANS("{\"token\":\"t\",\"expirationTimestamp\":\"tomorrow\"}"), -EINVAL,
                           "not an RFC 3339 time");
        assert_parse_fails(ANS("{\"token\":\"t\",\"expirationTimestamp\":1767312000}"), -EINVAL,
                           "expirationTimestamp must be a string");
        assert_parse_fails("{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"apiVersion\":"
                           "\"x\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"a\"}}",
                           -EINVAL, "bad JSON"); /* duplicate keys */
}
END_TEST

START_TEST(rfc3339)
{
        time_t t;
        ck_assert_int_eq(execcred_parse_time("2026-01-02T00:00:00Z", &t), 0);
        ck_assert_int_eq(t, NOW);
        ck_assert_int_eq(execcred_parse_time("2026-01-02T01:30:00+01:30", &t), 0);
        ck_assert_int_eq(t, NOW);
        ck_assert_int_eq(execcred_parse_time("2026-01-01T20:00:00.999999999-04:00", &t), 0);
        ck_assert_int_eq(t, NOW);
        ck_assert_int_eq(execcred_parse_time("2024-02-29T00:00:00Z", &t), 0);
        ck_assert_int_eq(execcred_parse_time("1970-01-01T00:00:00Z", &t), 0);
        ck_assert_int_eq(t, 0);
        static const char *const bad[] = {
            "",
            "2026-01-02",
            "2026-01-02 00:00:00Z",
            "2026-01-02t00:00:00Z",
            "2026-01-02T00:00:00",
            "2026-01-02T00:00:00z",
            "2026-13-02T00:00:00Z",
            "2026-00-02T00:00:00Z",
            "2025-02-29T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2026-01-02T24:00:00Z",
            "2026-01-02T00:60:00Z",
            "2026-01-02T00:00:60Z",
            "2026-01-02T00:00:00.Z",
            "2026-01-02T00:00:00+0100",
            "2026-01-02T00:00:00+24:00",
            "2026-01-02T00:00:00Zjunk",
            "+2026-01-02T00:00:00Z",
            "2026-1-02T00:00:00Z",
        };
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
                ck_assert_msg(execcred_parse_time(bad[i], &t) == -EINVAL, "accepted \"%s\"",
                              bad[i]);
}
END_TEST

/* ---- running plugins ---- */

/* Writes an executable script dir/name; its path into out (size 4200). */
static const char *script(const char *name, const char *body, char *out)
{
        (void)snprintf(out, 4200, "%s/%s", dir, name);
        _cleanup_strbuf_ strbuf_t sb = {0};
        ck_assert_int_eq(strbuf_printf(&sb, "#!/bin/sh\n%s\n", body), 0);
        ck_assert_int_eq(file_write_atomic(out, sb.data, sb.len, 0755, 0), 0);
        return out;
}

static int run_plugin(const char *command, const char *extra_json, int timeout_ms, execcred_t *ret,
                      hg_error_t *err)
{
        _cleanup_strbuf_ strbuf_t sb = {0};
        ck_assert_int_eq(strbuf_printf(&sb, "{\"command\":\"%s\"," V1 IM "%s}", command,
                                       extra_json ? extra_json : ""),
                         0);
        _unit_json_ json_t *j = unit_json(sb.data);
        _config_ execcred_config_t c = {0};
        ck_assert_msg(execcred_config_parse(j, dir, &c, err) == 0, "%s", err->message);
        _cleanup_free_ char *info = execcred_exec_info(&c, NULL);
        return execcred_run(&c, info, timeout_ms, ret, err);
}

#define PRINT_TOKEN(tok)                                             \
        "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\"," \
        "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"" tok "\"}}'"

START_TEST(run_gives_what_the_protocol_says)
{
        /* The plugin records its arguments, environment, exec info and stdin,
         * and whether it sees the descriptor left open without CLOEXEC. */
        int leaked = open("/dev/null", O_RDONLY | O_CLOEXEC);
        ck_assert_int_ge(leaked, 3);
        ck_assert_int_eq(fcntl(leaked, F_SETFD, 0), 0); /* the leak under test */
        char body[2048], path[4200];
        (void)snprintf(body, sizeof(body),
                       "{ printf 'args=%%s|%%s\\n' \"$1\" \"$2\"; printf 'foo=%%s\\n' \"$FOO\";"
                       "  printf 'outer=%%s\\n' \"$OUTER\"; printf 'info=%%s\\n' "
                       "\"$KUBERNETES_EXEC_INFO\";"
                       "  printf 'stdin=%%s\\n' \"$(cat)\"; [ -t 0 ] && echo tty;"
                       "  printf 'count=%%s\\n' $(tr '\\0' '\\n' </proc/$$/environ |"
                       "    grep -c -e '^KUBERNETES_EXEC_INFO=' -e '^FOO=');"
                       "  [ -e /proc/$$/fd/%d ] && echo leaked; } >'%s/seen'\n" PRINT_TOKEN("t1"),
                       leaked, dir);
        (void)script("plugin", body, path);
        ck_assert_int_eq(setenv("FOO", "outer-value", 1), 0);
        ck_assert_int_eq(setenv("OUTER", "kept", 1), 0);
        ck_assert_int_eq(setenv("KUBERNETES_EXEC_INFO", "stale", 1), 0);
        _cred_ execcred_t c = {0};
        hg_error_t err = {0};
        /* Relative to the kubeconfig's directory (dir here). */
        ck_assert_msg(run_plugin("./plugin",
                                 ",\"args\":[\"one\",\"two words\"],\"env\":[{\"name\":\"FOO\","
                                 "\"value\":\"first\"},{\"name\":\"FOO\",\"value\":\"inner\"}]",
                                 60000, &c, &err) == 0,
                      "%s", err.message);
        ck_assert_str_eq(c.token, "t1");
        char seen_path[4200];
        (void)snprintf(seen_path, sizeof(seen_path), "%s/seen", dir);
        _cleanup_free_ char *seen = NULL;
        size_t len;
        ck_assert_int_eq(file_read_bounded(seen_path, 65536, &seen, &len), 0);
        ck_assert_msg(strstr(seen, "args=one|two words\n"), "%s", seen);
        ck_assert_msg(strstr(seen, "foo=inner\n"), "the stanza's env wins, its last entry: %s",
                      seen);
        ck_assert_msg(strstr(seen, "outer=kept\n"), "our environment is kept: %s", seen);
        ck_assert_msg(strstr(seen,
                             "info={\"apiVersion\":\"client.authentication.k8s.io/v1\","
                             "\"kind\":\"ExecCredential\",\"spec\":{\"interactive\":false}}\n"),
                      "%s", seen);
        ck_assert_msg(strstr(seen, "stdin=\n"), "stdin is empty: %s", seen);
        ck_assert_msg(strstr(seen, "count=2\n"), "one KUBERNETES_EXEC_INFO, one FOO: %s", seen);
        ck_assert_msg(!strstr(seen, "tty"), "stdin is no terminal: %s", seen);
        ck_assert_msg(!strstr(seen, "leaked"), "descriptor %d reached the plugin", leaked);
        (void)close(leaked);
}
END_TEST

START_TEST(run_on_path)
{
        char path[4200];
        (void)script("my-auth-plugin", PRINT_TOKEN("from-path"), path);
        /* Relative PATH entries are passed over, as Go's LookPath does. */
        char env_path[8400];
        (void)snprintf(env_path, sizeof(env_path), ".:relative:%s:/usr/bin:/bin", dir);
        ck_assert_int_eq(setenv("PATH", env_path, 1), 0);
        _cred_ execcred_t c = {0};
        hg_error_t err = {0};
        ck_assert_msg(run_plugin("my-auth-plugin", NULL, 60000, &c, &err) == 0, "%s", err.message);
        ck_assert_str_eq(c.token, "from-path");
        ck_assert_int_eq(chdir(dir), 0);
        ck_assert_int_eq(setenv("PATH", ".:/usr/bin:/bin", 1), 0);
        execcred_t none = {0};
        ck_assert_int_eq(run_plugin("my-auth-plugin", NULL, 60000, &none, &err), -ENOENT);
}
END_TEST

START_TEST(run_failures)
{
        char path[4200];
        _cred_ execcred_t c = {0};
        hg_error_t err = {0};

        ck_assert_int_eq(run_plugin("no-such-plugin-anywhere",
                                    ",\"installHint\":\"Install it:\\n  apt install x\"", 60000, &c,
                                    &err),
                         -ENOENT);
        ck_assert_msg_has(err, "exec plugin no-such-plugin-anywhere not found on PATH");
        ck_assert_msg_has(err, "Install it: apt install x"); /* the hint, on one line */

        ck_assert_int_eq(run_plugin("./missing", NULL, 60000, &c, &err), -ENOENT);
        ck_assert_msg_has(err, "/missing: No such file");

        (void)snprintf(path, sizeof(path), "%s/plain", dir);
        ck_assert_int_eq(file_write_atomic(path, "x", 1, 0644, 0), 0);
        ck_assert_int_eq(run_plugin("./plain", NULL, 60000, &c, &err), -EACCES);
        ck_assert_msg_has(err, "not an executable file");

        (void)script("fails", "echo 'ERROR: gcloud: not logged in' >&2; echo more >&2; exit 3",
                     path);
        ck_assert_int_eq(run_plugin("./fails", NULL, 60000, &c, &err), -EIO);
        ck_assert_msg_has(err, "exited with status 3: ERROR: gcloud: not logged in more");

        (void)script("silent", "exit 1", path);
        ck_assert_int_eq(run_plugin("./silent", NULL, 60000, &c, &err), -EIO);
        ck_assert_msg_has(err, "status 1: (nothing on stderr)");

        (void)script("killed", "kill -9 $$", path);
        ck_assert_int_eq(run_plugin("./killed", NULL, 60000, &c, &err), -EIO);
        ck_assert_msg_has(err, "killed by signal 9");

        (void)script("badjson", "echo '{\"apiVersion\": oops'", path);
        ck_assert_int_eq(run_plugin("./badjson", NULL, 60000, &c, &err), -EINVAL);
        ck_assert_msg_has(err, "exec plugin ");
        ck_assert_msg_has(err, "bad JSON");

        (void)script("expired",
                     "printf '%s' '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
                     "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\","
                     "\"expirationTimestamp\":\"2020-01-01T00:00:00Z\"}}'",
                     path);
        ck_assert_int_eq(run_plugin("./expired", NULL, 60000, &c, &err), -EKEYEXPIRED);
        ck_assert_msg_has(err, "expired at 2020-01-01T00:00:00Z");

        (void)script("huge", "head -c 2000000 /dev/zero", path);
        ck_assert_int_eq(run_plugin("./huge", NULL, 60000, &c, &err), -EFBIG);
        ck_assert_msg_has(err, "printed more than");

        /* A plugin's stderr is cleaned for the message. */
        (void)script("noisy", "printf 'a\\033[31mb\\tc\\n\\n' >&2; exit 2", path);
        ck_assert_int_eq(run_plugin("./noisy", NULL, 60000, &c, &err), -EIO);
        ck_assert_msg_has(err, "status 2: a [31mb c");
        ck_assert_ptr_null(strchr(err.message, '\033'));
        ck_assert_ptr_null(c.token);
}
END_TEST

/* Whether pid is gone or a zombie, within 60 s (it returns as soon as it is:
 * the bound is for a machine at any load, not a timing claim). */
static bool gone(pid_t pid)
{
        for (int i = 0; i < 6000; i++) {
                char p[64], state = 0;
                (void)snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
                _cleanup_free_ char *stat = NULL;
                size_t len;
                if (file_read_bounded(p, 4096, &stat, &len) < 0)
                        return true;
                const char *close_paren = strrchr(stat, ')');
                if (close_paren && close_paren[1] == ' ')
                        state = close_paren[2];
                if (state == 'Z')
                        return true;
                (void)usleep(10000);
        }
        return false;
}

START_TEST(run_timeout_kills_the_group)
{
        char path[4200], body[1024];
        /* The plugin must have written both pids and its stderr line before
         * the deadline, whatever the machine's load: 3 s leaves a shell
         * ample time; the plugin itself would sleep 300. */
        (void)snprintf(body, sizeof(body),
                       "sleep 300 & echo $! >'%s/child'; echo $$ >'%s/self'; echo waiting >&2; "
                       "sleep 300",
                       dir, dir);
        (void)script("slow", body, path);
        _cred_ execcred_t c = {0};
        hg_error_t err = {0};
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        ck_assert_int_eq(run_plugin("./slow", NULL, 3000, &c, &err), -ETIMEDOUT);
        clock_gettime(CLOCK_MONOTONIC, &b);
        ck_assert_msg_has(err, "did not answer within 3.0 s (killed): waiting");
        /* Killed, not waited out: far less than the plugin's own 300 s. */
        ck_assert_int_lt(b.tv_sec - a.tv_sec, 120);
        char p[4200];
        long pids[2];
        const char *names[2] = {"self", "child"};
        for (int i = 0; i < 2; i++) {
                (void)snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
                _cleanup_free_ char *text = NULL;
                size_t len;
                ck_assert_int_eq(file_read_bounded(p, 64, &text, &len), 0);
                text[strcspn(text, "\n")] = '\0';
                uint32_t pid = 0;
                ck_assert_int_eq(parse_u32(text, &pid), 0);
                pids[i] = pid;
                ck_assert_int_gt(pids[i], 1);
                ck_assert_msg(gone((pid_t)pids[i]), "%s (pid %ld) still runs", names[i], pids[i]);
        }
}
END_TEST

static Suite *execcred_suite(void)
{
        Suite *s = suite_create("execcred");
        TCase *tc = tcase_create("parse");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, config_every_member);
        tcase_add_test(tc, config_defaults_and_paths);
        tcase_add_test(tc, config_refused);
        tcase_add_test(tc, exec_info);
        tcase_add_test(tc, answer_every_field);
        tcase_add_test(tc, answer_refused);
        tcase_add_test(tc, rfc3339);
        suite_add_tcase(s, tc);
        tc = tcase_create("run");
        tcase_add_checked_fixture(tc, setup, teardown);
        /* Generous: each test starts shells, and CI runs it beside the node. */
        tcase_set_timeout(tc, 100);
        tcase_add_test(tc, run_gives_what_the_protocol_says);
        tcase_add_test(tc, run_on_path);
        tcase_add_test(tc, run_failures);
        tcase_add_test(tc, run_timeout_kills_the_group);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(execcred_suite());
}
